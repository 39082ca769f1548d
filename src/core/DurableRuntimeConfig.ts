/**
 * Settings of the durable runtime. Core code reads them as a `Context.Reference`, so a host that
 * provides nothing gets the defaults; the Cloudflare configuration is composed of them.
 */
import { Context, Layer, Schema } from "effect"

const PositiveMillis = Schema.Int.check(
  Schema.isGreaterThanOrEqualTo(1, { expected: "a positive integer number of milliseconds" }),
)
const PositiveBytes = Schema.Int.check(
  Schema.isGreaterThanOrEqualTo(1, { expected: "a positive integer number of bytes" }),
)

/** The runtime's timing, in milliseconds, and the bound of what a Submission stores. */
export const DurableRuntimeSettings = Schema.Struct({
  /** How long a Claim stays live without renewal. */
  ownershipLeaseDuration: PositiveMillis,
  /** How often a running Attempt extends its lease (at step boundaries and during long steps). */
  leaseRenewalInterval: PositiveMillis,
  /**
   * How often `awaitSettlement` and `awaitProgress` read again when no write woke them: a host
   * with a progress hub wakes them on every write of its own incarnation.
   */
  settlementPollInterval: PositiveMillis,
  /** How often a running step looks for an accepted abort. */
  abortPollInterval: PositiveMillis,
  /**
   * How long `awaitChild` waits in memory for a child that has not settled yet before the
   * Attempt parks (beta.96 parked at once: 0). A child that answers within it costs its parent
   * no park, no further Attempt and no replay. Only a host with a progress hub waits (a
   * `ThreadObject` has one); the wait ends early when the event asks its Attempt to yield.
   */
  childAwaitMillis: Schema.Int.check(
    Schema.isBetween(
      { minimum: 0, maximum: 10_000 },
      { expected: "an integer number of milliseconds between 0 and 10000" },
    ),
  ),
  /**
   * The largest step result or output a Submission stores, in UTF-8 bytes of its JSON: a
   * larger step result fails the step, a larger output fails the Submission, each naming it; a
   * larger approval request payload is a defect; a larger step error or failure message is
   * replaced by one naming its size.
   */
  maxStoredValueBytes: PositiveBytes,
})
export type DurableRuntimeSettings = typeof DurableRuntimeSettings.Type

/** The defaults of every setting. */
export const DURABLE_RUNTIME_DEFAULTS: DurableRuntimeSettings = {
  ownershipLeaseDuration: 30_000,
  leaseRenewalInterval: 10_000,
  settlementPollInterval: 500,
  abortPollInterval: 500,
  childAwaitMillis: 250,
  maxStoredValueBytes: 131_072,
}

const decodeSettings = Schema.decodeUnknownEffect(DurableRuntimeSettings)

/** The runtime's timing; the defaults apply unless a layer provides other values. */
export class DurableRuntimeConfig extends Context.Reference<DurableRuntimeSettings>(
  "@effect-agent/platform-cloudflare/DurableRuntimeConfig",
  { defaultValue: () => DURABLE_RUNTIME_DEFAULTS },
) {
  /** The defaults with `overrides`; a value that does not decode fails with a `SchemaError`. */
  static readonly layer = (
    overrides: Partial<DurableRuntimeSettings> = {},
  ): Layer.Layer<never, Schema.SchemaError> =>
    Layer.effect(DurableRuntimeConfig, decodeSettings({ ...DURABLE_RUNTIME_DEFAULTS, ...overrides }))
}
