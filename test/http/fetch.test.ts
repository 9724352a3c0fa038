import { behaviour, redisBehaviour } from './behaviour.js'
import { redisWaitingRoomBehaviour, waitingRoomBehaviour } from './waiting-room.js'
import { readerBehaviour } from './reader.js'

behaviour('fetch')
redisBehaviour('fetch')
waitingRoomBehaviour('fetch')
redisWaitingRoomBehaviour('fetch')
readerBehaviour('fetch')
