/**
 * NestJS (12) behind the gate, on Nest's Express platform or on its Fastify platform. The
 * gate is the package's Express middleware (`app.use(airlock(options))`) or Fastify plugin
 * (`app.register(airlockShield, options)`), used as they are: no Nest module is needed.
 *   In a clone of the repository: npx tsx examples/nestjs.ts                  (Express platform)
 *                                 PLATFORM=fastify npx tsx examples/nestjs.ts (Fastify platform)
 *   In your Nest app (npm install airlock-shield): copy `createSite` and the `@Airlock()` decorator.
 * Nest's decorators need "experimentalDecorators" in tsconfig.json (the repository's has it, as
 * every Nest project does). tsx, esbuild and Vite emit no decorator metadata, so constructor
 * parameters name their provider with `@Inject(...)` instead of relying on the parameter's type.
 * With REDIS_URL set (and AIRLOCK_SECRET), slots and passes are shared by every instance.
 */
import 'reflect-metadata'
import { pathToFileURL } from 'node:url'
import {
  Controller,
  createParamDecorator,
  Get,
  Inject,
  Injectable,
  Module,
  Post,
  type ExecutionContext,
  type INestApplication,
  type Type,
} from '@nestjs/common'
import { NestFactory } from '@nestjs/core'
import { ExpressAdapter, type NestExpressApplication } from '@nestjs/platform-express'
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify'
import { Redis } from 'ioredis'
import { memoryStore, type AirlockHandle, type GateOptions } from 'airlock-shield'
import { airlock } from 'airlock-shield/express'
import { airlockShield } from 'airlock-shield/fastify'
import { redisStore } from 'airlock-shield/redis'

export type Platform = 'express' | 'fastify'

/** The visitor's handle (the gate's decision, `release()`): `res.locals.airlock` on Express, `reply.airlock` on Fastify. */
export const Airlock = createParamDecorator((_data: unknown, ctx: ExecutionContext): AirlockHandle | undefined => {
  const res = ctx.switchToHttp().getResponse<{ airlock?: AirlockHandle; locals?: { airlock?: AirlockHandle } }>()
  return res.locals?.airlock ?? res.airlock
})

@Injectable()
export class Catalogue {
  list(): string[] {
    return ['tea', 'coffee']
  }
}

@Controller()
export class SiteController {
  // @Inject names the provider: without decorator metadata, Nest cannot read it from the type.
  constructor(@Inject(Catalogue) private readonly catalogue: Catalogue) {}

  @Get()
  home(@Airlock() handle?: AirlockHandle): { products: string[]; decision?: string } {
    return { products: this.catalogue.list(), decision: handle?.decision?.kind }
  }

  @Get('health')
  health(): string {
    return 'ok' // in the gate's bypass list: never gated
  }

  // Ends the visitor's pass and frees its slot at once.
  @Post('logout')
  async logout(@Airlock() handle?: AirlockHandle): Promise<{ released: boolean }> {
    return { released: (await handle?.release()) ?? false }
  }
}

@Module({ controllers: [SiteController], providers: [Catalogue] })
export class SiteModule {}

/**
 * The Nest app on `platform`, every route behind one gate. The gate comes first: on Express the
 * middleware is added before Nest adds its body parsers and routes (at `init`/`listen`); on Fastify
 * the plugin's hooks apply to every route Nest adds later. Close it with `app.close()`.
 */
export async function createSite(
  platform: Platform,
  gate: GateOptions,
  module: Type = SiteModule,
): Promise<INestApplication> {
  if (platform === 'fastify') {
    const app = await NestFactory.create<NestFastifyApplication>(module, new FastifyAdapter(), {
      logger: false,
      forceCloseConnections: true,
    })
    await app.register(airlockShield, gate) // closed with Fastify, when the app closes
    return app
  }
  const app = await NestFactory.create<NestExpressApplication>(module, new ExpressAdapter(), {
    logger: false,
    forceCloseConnections: true,
  })
  const middleware = airlock(gate)
  app.use(middleware)
  // Stop the gate's timers when the app closes.
  const close = app.close.bind(app)
  app.close = async () => {
    await close()
    await middleware.close()
  }
  return app
}

// Run as a program (not when a test imports the file).
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const platform: Platform = process.env.PLATFORM === 'fastify' ? 'fastify' : 'express'
  const redis = process.env.REDIS_URL ? new Redis(process.env.REDIS_URL, { maxRetriesPerRequest: 1 }) : undefined
  const app = await createSite(platform, {
    limit: 20,
    store: redis ? redisStore({ client: redis }) : memoryStore(),
    secret: process.env.AIRLOCK_SECRET, // 32+ bytes; required in production with Redis
    bypass: ['/health'],
  })
  const port = Number(process.env.PORT ?? 3000)
  await app.listen(port, '127.0.0.1')
  console.log(`NestJS (${platform} platform) listening on http://127.0.0.1:${port}`)
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      void app.close().then(() => {
        redis?.disconnect()
        process.exit(0)
      })
    })
  }
}
