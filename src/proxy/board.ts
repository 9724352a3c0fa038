/**
 * The operator's dashboard as the proxy and the decision service serve it: at a path of their own
 * (default `/airlock`), on the gate's store, behind its token.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { createDashboard, type Dashboard, type DashboardOptions } from '../dashboard/server.js'

/** The dashboard at its path. */
export interface MountedDashboard {
  /** Its path, without a trailing `/`. */
  readonly path: string
  readonly handler: Dashboard
  /** True when `url` is the dashboard's: its path, below it, or its path with a query. */
  owns(url: string): boolean
  /**
   * Serves a request {@link owns} said yes to: the dashboard sees `req.url` relative to its path
   * (`originalUrl` keeps it whole); `client`: the visitor, as the server's trustProxy tells it.
   */
  serve(req: IncomingMessage, res: ServerResponse, client: string): void
}

/** The dashboard `dashboard` asks for (`{ token, path? }`), of the gate `name` on `on.store`. */
export function dashboardAt(
  dashboard: { token: string; path?: string },
  on: Pick<DashboardOptions, 'store' | 'secret' | 'trustProxy' | 'logger'> & { name: string },
): MountedDashboard {
  const path = (dashboard.path ?? '/airlock').replace(/\/$/, '')
  const handler = createDashboard({
    token: dashboard.token,
    store: on.store,
    names: [on.name],
    secret: on.secret,
    trustProxy: on.trustProxy,
    ...(on.logger ? { logger: on.logger } : {}),
  })
  return {
    path,
    handler,
    owns: (url) => url === path || url.startsWith(`${path}/`) || url.startsWith(`${path}?`),
    serve(req, res, client) {
      const url = req.url ?? '/'
      ;(req as IncomingMessage & { originalUrl?: string }).originalUrl = url
      req.url = url.slice(path.length) || '/'
      handler.handle(req, res, client)
    },
  }
}
