import { behaviour, redisBehaviour } from './behaviour.js'

behaviour('express4')
redisBehaviour('express4')
