import { behaviour, redisBehaviour } from './behaviour.js'

behaviour('fastify')
redisBehaviour('fastify')
