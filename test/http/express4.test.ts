import { behaviour, redisBehaviour } from './behaviour.js'
import { redisWaitingRoomBehaviour, waitingRoomBehaviour } from './waiting-room.js'

behaviour('express4')
redisBehaviour('express4')
waitingRoomBehaviour('express4')
redisWaitingRoomBehaviour('express4')
