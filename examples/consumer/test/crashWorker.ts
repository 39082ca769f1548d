/**
 * The Worker the Node-side restart test runs in Miniflare: the test build, with routes that arm
 * a crash and report alarm deliveries. Those routes read module state of the isolate only, so
 * they never wake an Object.
 *
 * A crashed Object stays down until the runtime is killed: after `ctx.abort()` workerd delivers
 * the pending alarm (the pass's crash-fallback prearm) to a fresh incarnation in the same runtime
 * at once, and that incarnation would finish the ticket before the test kills the runtime,
 * leaving the restart nothing to do.
 */
import { Effect } from "effect"
import type { RuntimeFailpointLocation } from "@effect-agent/platform-cloudflare/Testing"
import app, { type Env } from "../src/worker"
import { failpoints, Threads as TestThreads } from "./worker"

interface CrashEnv {
  readonly THREADS: DurableObjectNamespace<Threads>
}

/** Finished alarm deliveries per Object id, and whether each left the Object without an alarm. */
const deliveries = new Map<string, Array<{ quiet: boolean }>>()
/** Objects killed by an armed crash (once what they wrote before it is durable). */
const crashed = new Set<string>()

export class Threads extends TestThreads {
  override async alarm(): Promise<void> {
    // Down until the restart: the delivery never completes, so the alarm stays as stored.
    if (crashed.has(this.ctx.id.toString())) return new Promise<void>(() => {})
    try {
      await super.alarm()
    } finally {
      const id = this.ctx.id.toString()
      const quiet = (await this.ctx.storage.getAlarm()) === null
      deliveries.set(id, [...(deliveries.get(id) ?? []), { quiet }])
    }
  }

  /** The rows of the application's settlement log. */
  settlementLog(): Array<Record<string, SqlStorageValue>> {
    return this.ctx.storage.sql.exec("SELECT submission_id, outcome FROM settlement_log").toArray()
  }
}

export default {
  async fetch(request, env) {
    const url = new URL(request.url)
    const [, route, thread = ""] = url.pathname.split("/")
    const id = env.THREADS.idFromName(thread)
    switch (route) {
      case "crash": {
        // The next hit of `location` kills the Object, as a host crash would.
        const location = url.searchParams.get("location") as RuntimeFailpointLocation
        let armed = true
        failpoints.install(id, {
          runtime: (hit, ctx) =>
            hit === location && armed
              ? Effect.promise(() => {
                  armed = false
                  return ctx.storage.sync() // what was written before the hit is durable
                }).pipe(
                  Effect.andThen(
                    Effect.sync(() => {
                      crashed.add(id.toString())
                      ctx.abort("killed by the test")
                    }),
                  ),
                  Effect.andThen(Effect.never),
                )
              : Effect.void,
        })
        return Response.json({ armed: location })
      }
      case "crashed":
        return Response.json(crashed.has(id.toString()))
      case "deliveries":
        return Response.json(deliveries.get(id.toString()) ?? [])
      case "log":
        return Response.json(await env.THREADS.get(id).settlementLog())
      default:
        // The same namespace, seen by the production handler as its own `Threads`.
        return app.fetch(request, env as unknown as Env)
    }
  },
} satisfies ExportedHandler<CrashEnv>
