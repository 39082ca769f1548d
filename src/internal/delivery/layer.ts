/**
 * The native `ThreadMessageDelivery` of a `ThreadObject`: the delivery driver over the Object's
 * outbox, its routed port and mutation gate, recording outcomes through the runtime.
 */
import { Effect, Layer } from "effect"
import { DurableAgentRuntime } from "../../core/DurableAgentRuntime.ts"
import {
  deliveryInvalidatesRecovery,
  undeliverableIsFinal,
} from "../../core/internal/runtime/children/children.ts"
import { MessageOutbox } from "../../core/MessageOutbox.ts"
import { RuntimeFailpoint } from "../../core/RuntimeFailpoint.ts"
import { CloudflareDurableRuntimeConfig } from "../../CloudflareConfig.ts"
import { RoutedPort } from "../../RoutedPort.ts"
import { ThreadMutationGate } from "../maintenance/gate.ts"
import { ThreadMessageDelivery } from "../maintenance/hooks.ts"
import { makeMessageDelivery } from "./driver.ts"

/** Deliveries in flight at once. */
const CONCURRENCY = 4
/** Messages read per wave. */
const WAVE_SIZE = 32

/** @internal */
export const messageDeliveryLayer = Layer.effect(
  ThreadMessageDelivery,
  Effect.gen(function* () {
    const config = yield* CloudflareDurableRuntimeConfig
    const runtime = yield* DurableAgentRuntime
    const failpoint = yield* RuntimeFailpoint
    return makeMessageDelivery({
      outbox: yield* MessageOutbox,
      port: yield* RoutedPort,
      gate: yield* ThreadMutationGate,
      hit: failpoint.hit,
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
