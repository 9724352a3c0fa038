import { behaviour, redisBehaviour } from './behaviour.js'
import { redisWaitingRoomBehaviour, waitingRoomBehaviour } from './waiting-room.js'
import { readerBehaviour } from './reader.js'

behaviour('fastify')
redisBehaviour('fastify')
waitingRoomBehaviour('fastify')
redisWaitingRoomBehaviour('fastify')
readerBehaviour('fastify')
