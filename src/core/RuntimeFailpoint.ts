/**
 * Test hooks at every durable commit boundary of the runtime: before and after each ledger
 * write and history append, and at the semantic points between them. The production layer is
 * inert; tests fail typed, pause on a `Deferred`, or kill the Object at a location.
 */
import { Context, Effect, Layer } from "effect"
import type { DurableRuntimeFailpointError } from "./internal/runtime/model.ts"

const ledgerWrites = [
  "admit",
  "mark-ready",
  "claim-joining",
  "mark-joined",
  "revert-joining",
  "claim",
  "renew",
  "release",
  "park",
  "transition",
  "request-abort",
  "reserve-settlement",
  "finalize-settlement",
] as const

/** A ledger write the runtime brackets with `ledger:<write>:before|after`. */
export type RuntimeLedgerWrite = (typeof ledgerWrites)[number]

/** Every runtime failpoint location. */
export const runtimeFailpointLocations = [
  ...ledgerWrites.flatMap((write) => [`ledger:${write}:before`, `ledger:${write}:after`] as const),
  "history:append:before",
  "history:append:after",
  "submit:after-admit",
  "claim:after-claim",
  "input:after-canonical-append",
  "step:after-step-append",
  "uncertain:after-start-append",
  "approval:after-request-append",
  "terminalize:after-reserve",
  "terminalize:after-canonical-append",
  "abort:after-intent",
  "resolve:after-intent",
  "join:after-claim",
  "join:after-canonical-append",
  "child:after-start-append",
  "child:after-await-append",
  "child:after-admit",
  "child:after-settled-append",
  "child:after-marker-append",
  "child:after-marker-ack",
  "delivery:after-reply",
] as const

/** A point between durable commits where tests may pause, fail or kill the Object. */
export type RuntimeFailpointLocation = (typeof runtimeFailpointLocations)[number]

/** What a test does when a location is hit. */
export type RuntimeFailpointHandler = (
  location: RuntimeFailpointLocation,
) => Effect.Effect<void, DurableRuntimeFailpointError>

/** Runtime failpoints. */
export class RuntimeFailpoint extends Context.Service<
  RuntimeFailpoint,
  { readonly hit: RuntimeFailpointHandler }
>()("@effect-agent/durable-agent-runtime/RuntimeFailpoint") {
  /** The production failpoints: every hit is a no-op. */
  static readonly layer: Layer.Layer<RuntimeFailpoint> = Layer.succeed(this, { hit: () => Effect.void })

  /** Runs `handler` at every hit. */
  static readonly layerTest = (handler: RuntimeFailpointHandler): Layer.Layer<RuntimeFailpoint> =>
    Layer.succeed(this, { hit: handler })
}
