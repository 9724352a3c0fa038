import { behaviour, redisBehaviour } from './behaviour.js'
import { redisWaitingRoomBehaviour, waitingRoomBehaviour } from './waiting-room.js'
import { readerBehaviour } from './reader.js'

behaviour('express5')
redisBehaviour('express5')
waitingRoomBehaviour('express5')
redisWaitingRoomBehaviour('express5')
readerBehaviour('express5')
