/** The Redis store on iovalkey: the store contract (single server and Cluster) and its failure behaviour (clients.ts). */
import { clientSuite } from './clients.js'

clientSuite('iovalkey')
