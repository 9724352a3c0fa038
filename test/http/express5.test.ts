import { behaviour, redisBehaviour } from './behaviour.js'
import { redisWaitingRoomBehaviour, waitingRoomBehaviour } from './waiting-room.js'

behaviour('express5')
redisBehaviour('express5')
waitingRoomBehaviour('express5')
redisWaitingRoomBehaviour('express5')
