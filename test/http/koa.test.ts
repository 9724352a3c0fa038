import { behaviour, redisBehaviour } from './behaviour.js'
import { redisWaitingRoomBehaviour, waitingRoomBehaviour } from './waiting-room.js'
import { readerBehaviour } from './reader.js'

behaviour('koa')
redisBehaviour('koa')
waitingRoomBehaviour('koa')
redisWaitingRoomBehaviour('koa')
readerBehaviour('koa')
