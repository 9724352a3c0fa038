/** The Redis store on ioredis 6: the store contract (single server and Cluster) and its failure behaviour (clients.ts). */
import { clientSuite } from './clients.js'

clientSuite('ioredis 6')
