/**
 * A SQLite-backed Durable Object for the maintenance suites. Most tests run inside it with
 * `runInDurableObject` and build incarnations in-process. For delivery-level tests a test
 * registers an incarnation factory under the Object's id: each instance (a fresh one after
 * `abortAllDurableObjects`) then builds it in its constructor gate, runs `ensureAlarm`, and its
 * `alarm()` runs one `ThreadMaintenance.pass`.
 */
import { DurableObject } from "cloudflare:workers"
import { Context, Effect, Exit, Layer, Scope } from "effect"
import { type MaintenancePassReport, ThreadMaintenance } from "../../src/Alarm.ts"

/** Builds the maintenance stack of one incarnation over this Object's state. */
export type IncarnationFactory = (ctx: DurableObjectState) => Layer.Layer<ThreadMaintenance, unknown>

const factories = new Map<string, IncarnationFactory>()

/** Registers the incarnation the Object `id` builds from now on. */
export const registerIncarnation = (id: DurableObjectId, factory: IncarnationFactory): void => {
  factories.set(id.toString(), factory)
}

export class MaintenanceTestObject extends DurableObject {
  #maintenance: ThreadMaintenance["Service"] | undefined
  /** Exits of the alarm deliveries of this instance, oldest first. */
  readonly deliveries: Array<Exit.Exit<MaintenancePassReport, unknown>> = []

  constructor(ctx: DurableObjectState, env: Cloudflare.Env) {
    super(ctx, env)
    const factory = factories.get(ctx.id.toString())
    if (factory === undefined) return
    void ctx.blockConcurrencyWhile(async () => {
      // The incarnation lives as long as this instance; eviction need not run finalizers.
      const scope = Scope.makeUnsafe()
      const services = await Effect.runPromise(Layer.buildWithScope(Layer.fresh(factory(ctx)), scope))
      const maintenance = Context.get(services, ThreadMaintenance)
      await Effect.runPromise(maintenance.ensureAlarm)
      this.#maintenance = maintenance
    })
  }

  override async alarm(): Promise<void> {
    const maintenance = this.#maintenance
    if (maintenance === undefined) return
    const exit = await Effect.runPromiseExit(maintenance.pass)
    this.deliveries.push(exit)
    // A rejected handler makes workerd redeliver, as in production.
    if (Exit.isFailure(exit)) throw new Error("maintenance pass failed")
  }
}
