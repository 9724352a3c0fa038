import { behaviour, redisBehaviour } from './behaviour.js'

behaviour('express5')
redisBehaviour('express5')
