/**
 * Timing of the durable runtime. Core code reads it as a `Context.Reference`, so a host that
 * provides nothing gets the defaults; the Cloudflare host maps its own configuration onto it.
 */
import { Context, Layer, Schema } from "effect"

const PositiveMillis = Schema.Int.check(
  Schema.isGreaterThanOrEqualTo(1, { expected: "a positive integer number of milliseconds" }),
)

/** The runtime's timing, in milliseconds. */
export const DurableRuntimeSettings = Schema.Struct({
  /** How long a Claim stays live without renewal. */
  ownershipLeaseDuration: PositiveMillis,
  /** How often a running Attempt extends its lease (at step boundaries and during long steps). */
  leaseRenewalInterval: PositiveMillis,
  /** How often `awaitSettlement` reads the ledger. */
  settlementPollInterval: PositiveMillis,
  /** How often a running step looks for an accepted abort. */
  abortPollInterval: PositiveMillis,
})
export type DurableRuntimeSettings = typeof DurableRuntimeSettings.Type

/** The defaults of every setting. */
export const durableRuntimeDefaults: DurableRuntimeSettings = {
  ownershipLeaseDuration: 30_000,
  leaseRenewalInterval: 10_000,
  settlementPollInterval: 500,
  abortPollInterval: 500,
}

const decodeSettings = Schema.decodeUnknownEffect(DurableRuntimeSettings)

/** The runtime's timing; the defaults apply unless a layer provides other values. */
export class DurableRuntimeConfig extends Context.Reference<DurableRuntimeSettings>(
  "@effect-agent/durable-agent-runtime/DurableRuntimeConfig",
  { defaultValue: () => durableRuntimeDefaults },
) {
  /** The defaults with `overrides`; a value that is not a positive integer fails with a `SchemaError`. */
  static readonly layer = (
    overrides: Partial<DurableRuntimeSettings> = {},
  ): Layer.Layer<never, Schema.SchemaError> =>
    Layer.effect(DurableRuntimeConfig, decodeSettings({ ...durableRuntimeDefaults, ...overrides }))
}
