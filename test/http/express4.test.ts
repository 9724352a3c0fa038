import { behaviour, redisBehaviour } from './behaviour.js'
import { redisWaitingRoomBehaviour, waitingRoomBehaviour } from './waiting-room.js'
import { readerBehaviour } from './reader.js'

behaviour('express4')
redisBehaviour('express4')
waitingRoomBehaviour('express4')
redisWaitingRoomBehaviour('express4')
readerBehaviour('express4')
