/**
 * Test hooks at every durable commit boundary of the runtime: before and after each ledger
 * write and history append, and at the semantic points between them. The production layer is
 * inert; tests fail typed, pause on a `Deferred`, or kill the Object at a location.
 * `DurableAgentRuntime` exports the service (its layer requires it); `Testing` exports the
 * locations and handlers.
 *
 * A timed park (`parkTimed`) is bracketed as `ledger:park:*`; the due path's claim in place as
 * `ledger:claim-due:*`, followed by `timer:after-fire` before the replay. An event that ends a
 * wait is recorded with the Submission's resumption (`ledger:transition:*`), one that does not is
 * an input append (`history:append:*`); either is followed by `event:after-receive`. A delayed
 * head parked until its `notBefore` is `ledger:defer-head:*`; a schedule's writes are
 * `ledger:schedule-put:*` and `ledger:schedule-remove:*`, and a due occurrence's admission with
 * the schedule's advance (one transaction) `ledger:occurrence:*`, followed by
 * `occurrence:after-admit`.
 *
 * Admission and settlement are each one transaction (the ledger records their canonical
 * records itself), so they have no boundary inside them; nor have a settlement with the
 * messages it owes other Objects (`ledger:settle:*`), a join's admission (`ledger:admit:*`),
 * and a child's settlement recorded with its waiting parent's resumption. The repairs of rows an older release
 * left mid-admission or mid-settlement (`markReady`, `reserveSettlement`,
 * `finalizeSettlement`) run unbracketed.
 */
import { Context, Effect, Layer } from "effect"
import type { DurableRuntimeFailpointError } from "./internal/runtime/shared/failpointError.ts"

const LEDGER_WRITES = [
  "admit",
  "mark-joined",
  "revert-joining",
  "claim",
  "renew",
  "release",
  "park",
  "transition",
  "request-abort",
  "settle",
  "claim-due",
  "defer-head",
  "schedule-put",
  "schedule-remove",
  "occurrence",
] as const

/** A ledger write the runtime brackets with `ledger:<write>:before|after`. */
export type RuntimeLedgerWrite = (typeof LEDGER_WRITES)[number]

/** Every runtime failpoint location (pure: a bundle that does not use it drops it). */
export const RUNTIME_FAILPOINT_LOCATIONS = /* @__PURE__ */ (() =>
  [
    ...LEDGER_WRITES.flatMap((write) => [`ledger:${write}:before`, `ledger:${write}:after`] as const),
    "history:append:before",
    "history:append:after",
    "submit:after-admit",
    "claim:after-claim",
    "timer:after-fire",
    "retry:after-failure-park",
    "occurrence:after-admit",
    "input:after-canonical-append",
    "step:after-step-append",
    "uncertain:after-start-append",
    "reconcile:after-start-append",
    "reconcile:after-answer-append",
    "approval:after-request-append",
    "approval:after-timeout-append",
    "event:after-receive",
    "event:after-timeout-append",
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
    "retention:defer:before",
    "retention:defer:after",
    "retention:archive:before",
    "retention:archive:after",
    "retention:remove:before",
    "retention:remove:after",
    "retention:forget:before",
    "retention:forget:after",
  ] as const)()

/** A point between durable commits where tests may pause, fail or kill the Object. */
export type RuntimeFailpointLocation = (typeof RUNTIME_FAILPOINT_LOCATIONS)[number]

/** What a test does when a location is hit. */
export type RuntimeFailpointHandler = (
  location: RuntimeFailpointLocation,
) => Effect.Effect<void, DurableRuntimeFailpointError>

/** Runtime failpoints. */
export class RuntimeFailpoint extends Context.Service<
  RuntimeFailpoint,
  { readonly hit: RuntimeFailpointHandler }
>()("@effect-agent/platform-cloudflare/RuntimeFailpoint") {
  /** The production failpoints: every hit is a no-op. */
  static readonly layer: Layer.Layer<RuntimeFailpoint> = Layer.succeed(this, { hit: () => Effect.void })

  /** Runs `handler` at every hit. */
  static readonly layerTest = (handler: RuntimeFailpointHandler): Layer.Layer<RuntimeFailpoint> =>
    Layer.succeed(this, { hit: handler })
}
