/** The Redis store on node-redis 5: the store contract (single server and Cluster) and its failure behaviour (clients.ts). */
import { clientSuite } from './clients.js'

clientSuite('node-redis 5')
