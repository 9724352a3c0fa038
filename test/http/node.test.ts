import { behaviour, redisBehaviour } from './behaviour.js'
import { readerBehaviour } from './reader.js'
import { redisWaitingRoomBehaviour, waitingRoomBehaviour } from './waiting-room.js'

behaviour('node')
redisBehaviour('node')
waitingRoomBehaviour('node')
redisWaitingRoomBehaviour('node')
readerBehaviour('node')
