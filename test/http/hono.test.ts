import { behaviour, redisBehaviour } from './behaviour.js'
import { redisWaitingRoomBehaviour, waitingRoomBehaviour } from './waiting-room.js'
import { readerBehaviour } from './reader.js'

behaviour('hono')
redisBehaviour('hono')
waitingRoomBehaviour('hono')
redisWaitingRoomBehaviour('hono')
readerBehaviour('hono')
