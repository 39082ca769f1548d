/**
 * Settings of the durable runtime. Core code reads them as a `Context.Reference`, so a host that
 * provides nothing gets the defaults; the Cloudflare configuration is composed of them.
 */
import { Context, Layer, Schema } from "effect"
import { MAX_INPUT_BYTES_CEILING } from "./internal/rowBytes.ts"

/**
 * The longest timing setting: 2,147,483,647 ms (2^31 - 1, about 24.8 days), the longest delay
 * `setTimeout` takes. Far below it, `now` plus any setting stays a valid `Date` for an alarm.
 */
const MAX_SETTING_MILLIS = 2_147_483_647

const PositiveMillis = Schema.Int.check(
  Schema.isBetween(
    { minimum: 1, maximum: MAX_SETTING_MILLIS },
    {
      expected: `an integer number of milliseconds between 1 and ${MAX_SETTING_MILLIS} (2^31 - 1, setTimeout's longest delay)`,
    },
  ),
)
const StoredBytes = Schema.Int.check(
  Schema.isBetween(
    { minimum: 1, maximum: MAX_INPUT_BYTES_CEILING },
    {
      expected: `an integer number of bytes between 1 and ${MAX_INPUT_BYTES_CEILING} (what one SQLite row holds besides a Submission's other columns)`,
    },
  ),
)

/**
 * The runtime's timing, in milliseconds, and the bound of what a Submission stores. Every
 * duration is an integer from 1 to 2,147,483,647 ms (2^31 - 1, about 24.8 days, the longest
 * delay `setTimeout` takes) unless its own range says otherwise.
 */
export const DurableRuntimeSettings = Schema.Struct({
  /** How long a Claim stays live without renewal: 1 to 2,147,483,647 ms. */
  ownershipLeaseDuration: PositiveMillis,
  /**
   * How often a running Attempt extends its lease (at step boundaries and during long steps):
   * 1 to 2,147,483,647 ms.
   */
  leaseRenewalInterval: PositiveMillis,
  /**
   * How often `awaitSettlement` and `awaitProgress` read again when no write woke them: a host
   * with a progress hub wakes them on every write of its own incarnation. 1 to 2,147,483,647 ms.
   */
  settlementPollInterval: PositiveMillis,
  /** How often a running step looks for an accepted abort: 1 to 2,147,483,647 ms. */
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
   * replaced by one naming its size. At most 1,934,464 (Cloudflare's 2 MB row less what a
   * Submission's row holds besides); `CloudflareConfig` also bounds it with the input limit.
   */
  maxStoredValueBytes: StoredBytes,
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
