/**
 * Runtime configuration of a Cloudflare Durable Object host, decoded once before any resource
 * opens. Overrides are partial; every field that is not overridden takes its default from
 * `CLOUDFLARE_RUNTIME_DEFAULTS`. A bad value fails with `CloudflareConfigError` naming the field.
 */
import { Context, Effect, Layer, Result, Schema } from "effect"

/** A finite auxiliary dispatch allowance in milliseconds: an integer in [1, 300000]. */
export const AuxiliaryDispatchMillis = Schema.Int.check(
  Schema.isBetween(
    { minimum: 1, maximum: 300_000 },
    { expected: "an integer number of milliseconds between 1 and 300000" },
  ),
)
export type AuxiliaryDispatchMillis = typeof AuxiliaryDispatchMillis.Type

const PositiveMillis = Schema.Int.check(
  Schema.isGreaterThanOrEqualTo(1, { expected: "a positive integer number of milliseconds" }),
)
const NonNegativeMillis = Schema.Int.check(
  Schema.isGreaterThanOrEqualTo(0, { expected: "a non-negative integer number of milliseconds" }),
)
const PositiveCount = Schema.Int.check(Schema.isGreaterThanOrEqualTo(1, { expected: "a positive integer" }))
const Label = Schema.String.check(Schema.isNonEmpty({ expected: "a non-empty string" }))

/** Admission and storage limits of one Object. */
export class CloudflareRuntimeLimits extends Schema.Class<CloudflareRuntimeLimits>(
  "@effect-agent/platform-cloudflare/CloudflareRuntimeLimits",
)({
  maxQueueDepthPerLane: PositiveCount,
  maxInputBytes: PositiveCount,
  maxDatabaseBytes: PositiveCount,
}) {}

/** The decoded configuration value. */
export class CloudflareDurableRuntimeConfigValue extends Schema.Class<CloudflareDurableRuntimeConfigValue>(
  "@effect-agent/platform-cloudflare/CloudflareDurableRuntimeConfigValue",
)({
  deploymentId: Label,
  producerPrefix: Label,
  /** First maintenance backoff step; half of it is the minimum alarm delay. */
  alarmBackoffBase: PositiveMillis,
  alarmBackoffCap: PositiveMillis,
  /** Native maintenance cadence while a generation is dirty without a matching retry. */
  wakeScanInterval: PositiveMillis,
  projectionDispatchTimeoutMillis: AuxiliaryDispatchMillis,
  /** How long one delivery of a message to another Object may take before it is retried. */
  deliveryAttemptTimeoutMillis: AuxiliaryDispatchMillis,
  /** First retry delay of a failed delivery; it doubles per attempt up to the cap. */
  deliveryRetryBaseMillis: PositiveMillis,
  deliveryRetryCapMillis: PositiveMillis,
  ownershipLeaseDuration: PositiveMillis,
  settlementPollInterval: PositiveMillis,
  leaseRenewalInterval: PositiveMillis,
  abortPollInterval: PositiveMillis,
  observationPollInterval: NonNegativeMillis,
  maxStoredValueBytes: PositiveCount,
  verifyOnOpen: Schema.Boolean,
  limits: CloudflareRuntimeLimits,
}) {}

/** The encoded (plain) form of the configuration. */
export type CloudflareDurableRuntimeConfigInput = typeof CloudflareDurableRuntimeConfigValue.Encoded

/** Partial overrides; `limits` may itself be partial. */
export type CloudflareDurableRuntimeConfigOverrides = {
  readonly [
    K in Exclude<keyof CloudflareDurableRuntimeConfigInput, "limits">
  ]?: CloudflareDurableRuntimeConfigInput[K]
} & { readonly limits?: Partial<CloudflareDurableRuntimeConfigInput["limits"]> }

/** Defaults of every field. */
export const CLOUDFLARE_RUNTIME_DEFAULTS: CloudflareDurableRuntimeConfigInput = {
  deploymentId: "development",
  producerPrefix: "cf",
  alarmBackoffBase: 100,
  alarmBackoffCap: 5_000,
  wakeScanInterval: 1_000,
  projectionDispatchTimeoutMillis: 30_000,
  deliveryAttemptTimeoutMillis: 30_000,
  deliveryRetryBaseMillis: 1_000,
  deliveryRetryCapMillis: 60_000,
  ownershipLeaseDuration: 30_000,
  settlementPollInterval: 500,
  leaseRenewalInterval: 10_000,
  abortPollInterval: 500,
  observationPollInterval: 25,
  maxStoredValueBytes: 131_072,
  verifyOnOpen: false,
  limits: { maxQueueDepthPerLane: 256, maxInputBytes: 1_048_576, maxDatabaseBytes: 9_000_000_000 },
}

/** A configuration value that does not decode; `field` is its dotted path. */
export class CloudflareConfigError extends Schema.TaggedError<CloudflareConfigError>()(
  "CloudflareConfigError",
  { field: Schema.String, message: Schema.String },
) {}

type FieldSchemas = Readonly<Record<string, Schema.Top & { readonly DecodingServices: never }>>

const checkFields = (
  value: Readonly<Record<string, unknown>>,
  fields: FieldSchemas,
  prefix: string,
): CloudflareConfigError | undefined => {
  for (const key of Object.keys(value)) {
    const field = `${prefix}${key}`
    const schema = fields[key]
    if (schema === undefined) {
      return new CloudflareConfigError({ field, message: `Unknown configuration field "${field}"` })
    }
    if (key === "limits" && prefix === "") continue
    const decoded = Schema.decodeUnknownResult(schema)(value[key])
    if (Result.isFailure(decoded)) {
      return new CloudflareConfigError({ field, message: `Invalid "${field}": ${decoded.failure.message}` })
    }
  }
  return undefined
}

const isRecord = (value: unknown): value is Readonly<Record<string, unknown>> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** Merges overrides over the defaults and decodes the result once. */
export const decodeCloudflareRuntimeConfig = (
  overrides: CloudflareDurableRuntimeConfigOverrides = {},
): Effect.Effect<CloudflareDurableRuntimeConfigValue, CloudflareConfigError> =>
  Effect.suspend(() => {
    const input: unknown = overrides
    if (!isRecord(input)) {
      return Effect.fail(
        new CloudflareConfigError({ field: "", message: "Configuration overrides must be an object" }),
      )
    }
    const limits: unknown = input["limits"] ?? {}
    if (!isRecord(limits)) {
      return Effect.fail(
        new CloudflareConfigError({ field: "limits", message: 'Invalid "limits": expected an object' }),
      )
    }
    const invalid =
      checkFields(input, CloudflareDurableRuntimeConfigValue.fields, "") ??
      checkFields(limits, CloudflareRuntimeLimits.fields, "limits.")
    if (invalid !== undefined) return Effect.fail(invalid)
    const merged = {
      ...CLOUDFLARE_RUNTIME_DEFAULTS,
      ...input,
      limits: { ...CLOUDFLARE_RUNTIME_DEFAULTS.limits, ...limits },
    }
    return Schema.decodeUnknownEffect(CloudflareDurableRuntimeConfigValue)(merged).pipe(
      Effect.mapError((error) => new CloudflareConfigError({ field: "", message: error.message })),
    )
  })

/** The configuration of this Object's runtime. */
export class CloudflareDurableRuntimeConfig extends Context.Service<
  CloudflareDurableRuntimeConfig,
  CloudflareDurableRuntimeConfigValue
>()("@effect-agent/platform-cloudflare/CloudflareDurableRuntimeConfig") {
  /** Decodes partial overrides over the defaults. */
  static readonly layer = (
    overrides: CloudflareDurableRuntimeConfigOverrides = {},
  ): Layer.Layer<CloudflareDurableRuntimeConfig, CloudflareConfigError> =>
    Layer.effect(this, decodeCloudflareRuntimeConfig(overrides))

  /** The defaults, unchanged. */
  static readonly layerDefault: Layer.Layer<CloudflareDurableRuntimeConfig> = Layer.succeed(
    this,
    Schema.decodeUnknownSync(CloudflareDurableRuntimeConfigValue)(CLOUDFLARE_RUNTIME_DEFAULTS),
  )
}
