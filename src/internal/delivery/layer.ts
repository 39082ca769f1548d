/**
 * The native `ThreadMessageDelivery` of a `ThreadObject`: the delivery driver over the Object's
 * outbox, its routed port and mutation gate, recording outcomes through the runtime. The
 * routed port's key comes from the public `RoutedPort` module that owns it, as an argument.
 */
import { type Context, Effect, Layer } from "effect"
import { DurableAgentRuntime } from "../../core/DurableAgentRuntime.ts"
import {
  deliveryInvalidatesRecovery,
  undeliverableIsFinal,
} from "../../core/internal/runtime/children/children.ts"
import { nextNudge } from "../../core/internal/progress/deliveryNudge.ts"
import { MessageOutbox } from "../../core/MessageOutbox.ts"
import { ProgressHub } from "../../core/ProgressHub.ts"
import { RuntimeFailpoint } from "../../core/RuntimeFailpoint.ts"
import { CloudflareDurableRuntimeConfig } from "../../CloudflareConfig.ts"
import type { RoutedPort } from "../../RoutedPort.ts"
import { ThreadMutationGate } from "../maintenance/gate.ts"
import { ThreadMessageDelivery } from "../maintenance/hooks.ts"
import { makeMessageDelivery } from "./driver.ts"

/** Deliveries in flight at once. */
const CONCURRENCY = 4
/** Messages read per wave. */
const WAVE_SIZE = 32

/** @internal The delivery over the routed port that `port` (the `RoutedPort` key) reads from context. */
export const messageDeliveryLayer = (port: Context.Key<RoutedPort, RoutedPort["Service"]>) =>
  Layer.effect(
    ThreadMessageDelivery,
    Effect.gen(function* () {
      const config = yield* CloudflareDurableRuntimeConfig
      const runtime = yield* DurableAgentRuntime
      const failpoint = yield* RuntimeFailpoint
      return makeMessageDelivery({
        outbox: yield* MessageOutbox,
        port: yield* port,
        gate: yield* ThreadMutationGate,
        hit: failpoint.hit,
        nudged: nextNudge(yield* ProgressHub),
        recorder: {
          invalidatesRecovery: deliveryInvalidatesRecovery,
          undeliverableIsFinal,
          record: runtime.recordDelivery,
        },
        settings: {
          attemptTimeoutMillis: config.deliveryAttemptTimeoutMillis,
          retryBaseMillis: config.deliveryRetryBaseMillis,
          retryCapMillis: config.deliveryRetryCapMillis,
          concurrency: CONCURRENCY,
          waveSize: WAVE_SIZE,
        },
      })
    }),
  )
