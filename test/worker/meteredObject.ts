/**
 * `ThreadObject`s over the bench's counting storage view (bench/worker/meter.ts), for the cost
 * suite (test/bench/OperationCosts.test.ts): every SQL row, KV key and alarm call the library
 * makes is counted, and every alarm delivery. The default configuration, and one with a
 * one-second retention; children of the delegator run in another Object of the same namespace.
 */
import type { CloudflareDurableRuntimeConfigOverrides } from "../../src/CloudflareConfig.ts"
import * as ThreadObject from "../../src/ThreadObject.ts"
import { meterState, type StorageMeter } from "../../bench/worker/meter.ts"
import {
  courierAgent,
  delegatorAgent,
  echoAgent,
  napAgent,
  reviewAgent,
  verifierAgent,
} from "./threadObject.ts"

const metered = (namespaceBinding: string, config: CloudflareDurableRuntimeConfigOverrides) =>
  class MeteredThreadObject extends ThreadObject.make(
    ThreadObject.layer([echoAgent, napAgent, reviewAgent, delegatorAgent, verifierAgent, courierAgent]),
    { namespaceBinding, config },
  ) {
    readonly meter: StorageMeter
    /** The storage itself, for the harness's uncounted reads. */
    readonly raw: DurableObjectStorage
    /** Alarm deliveries to this incarnation. */
    deliveries = 0

    constructor(ctx: DurableObjectState, env: Cloudflare.Env) {
      const meter = meterState(ctx)
      const raw = ctx.storage
      // workerd's base class accepts only its own state object, so the metered storage is
      // installed on it as an own property that shadows the native getter (as the bench does).
      Object.defineProperty(ctx, "storage", { value: meter.storage, configurable: true })
      super(ctx, env)
      this.meter = meter
      this.raw = raw
    }

    override async alarm(): Promise<void> {
      this.deliveries += 1
      this.meter.delivered()
      await super.alarm()
    }
  }

/** The library at its default configuration. */
export class MeteredThreadObject extends metered("THREADS_METERED", {}) {}

/** The same with retention: settled Submissions removed one second after they settle. */
export class MeteredRetainedThreadObject extends metered("THREADS_METERED_RETAINED", {
  retention: { settledForMillis: 1_000, windowMillis: 1_000 },
}) {}
