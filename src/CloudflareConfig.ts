/**
 * Runtime configuration of a Cloudflare Durable Object host, decoded once before any resource
 * opens. Overrides are partial; every field that is not overridden takes its default from
 * `CLOUDFLARE_RUNTIME_DEFAULTS`. A bad value fails with `CloudflareConfigError` naming the field.
 *
 * It is composed of the durable runtime's settings and the ledger's limits (their fields and
 * their defaults), plus what only the Cloudflare host reads: the maintenance timing and the
 * database size limit.
 */
import { Context, Effect, Layer, Result, Schema } from "effect"
import { DURABLE_RUNTIME_DEFAULTS, DurableRuntimeSettings } from "./core/DurableRuntimeConfig.ts"
import { LEDGER_LIMIT_DEFAULTS, LedgerLimits } from "./core/SubmissionLedger.ts"

/** A finite auxiliary dispatch allowance in milliseconds: an integer in [1, 300000]. */
export const AuxiliaryDispatchMillis = Schema.Int.check(
  Schema.isBetween(
    { minimum: 1, maximum: 300_000 },
    { expected: "an integer number of milliseconds between 1 and 300000" },
  ),
)
export type AuxiliaryDispatchMillis = typeof AuxiliaryDispatchMillis.Type

/**
 * The longest timing setting: 2,147,483,647 ms (2^31 - 1, about 24.8 days), the longest delay
 * `setTimeout` takes. Far below it, `now` plus any setting stays a valid `Date` for `setAlarm`
 * (whose latest is 8.64e15 ms since the epoch).
 */
const MAX_SETTING_MILLIS = 2_147_483_647

/** An integer number of milliseconds in [minimum, MAX_SETTING_MILLIS]. */
const MillisFrom = (minimum: number) =>
  Schema.Int.check(
    Schema.isBetween(
      { minimum, maximum: MAX_SETTING_MILLIS },
      {
        expected: `an integer number of milliseconds between ${minimum} and ${MAX_SETTING_MILLIS} (2^31 - 1, setTimeout's longest delay)`,
      },
    ),
  )
const PositiveMillis = MillisFrom(1)

/** An integer count in [minimum, maximum]. */
const CountBetween = (minimum: number, maximum: number) =>
  Schema.Int.check(
    Schema.isBetween({ minimum, maximum }, { expected: `an integer between ${minimum} and ${maximum}` }),
  )

/** The most heads one alarm event may serve. */
const MAX_HEADS_PER_EVENT = 10_000
/** The most Object kills a cap counts; a larger cap is `"never"` in practice. */
const MAX_OBJECT_KILLS = 1_000
/** The most Submissions `keepPerThread` keeps per Thread. */
const MAX_KEEP_PER_THREAD = 1_000_000
/** The longest retention that is not `"forever"`: 3,650 days (about ten years). */
const MAX_RETENTION_MILLIS = 315_360_000_000

/** Admission and storage limits of one Object: the ledger's, and the database's size. */
export class CloudflareRuntimeLimits extends Schema.Class<CloudflareRuntimeLimits>(
  "@effect-agent/platform-cloudflare/CloudflareConfig/CloudflareRuntimeLimits",
)({
  ...LedgerLimits.fields,
  /**
   * New Submissions are refused once the Object's SQLite database holds this many bytes, so
   * that work already accepted keeps room to settle below Cloudflare's limit: at most 10 GB
   * (10,000,000,000), the storage Cloudflare allows one Object.
   */
  maxDatabaseBytes: Schema.Int.check(
    Schema.isBetween(
      { minimum: 1, maximum: 10_000_000_000 },
      { expected: "an integer number of bytes between 1 and 10000000000 (Cloudflare's 10 GB per Object)" },
    ),
  ),
}) {}

/**
 * How long settled Submissions are kept. Retention removes a settled Submission (its ledger row,
 * its history records, the messages it sent once acknowledged, and so its idempotency key) once
 * it has been settled for `settledForMillis`, in maintenance passes woken at most once per
 * `windowMillis` for it. Nonterminal Submissions and what they still need are never removed.
 */
export class RetentionPolicy extends Schema.Class<RetentionPolicy>(
  "@effect-agent/platform-cloudflare/CloudflareConfig/RetentionPolicy",
)({
  /**
   * How long a settled Submission is kept, and so how long its idempotency key replays it;
   * `"forever"` (the default) keeps everything. A key used again after its Submission was
   * removed admits a new Submission. 1 ms to 315,360,000,000 ms (3,650 days); keep longer with
   * `"forever"`.
   */
  settledForMillis: Schema.Union([
    Schema.Int.check(
      Schema.isBetween(
        { minimum: 1, maximum: MAX_RETENTION_MILLIS },
        {
          expected: `an integer number of milliseconds between 1 and ${MAX_RETENTION_MILLIS} (3,650 days; longer is "forever")`,
        },
      ),
    ),
    Schema.Literal("forever"),
  ]),
  /** The newest Submissions of each Thread (by queue order) kept whatever their age: 0 to 1,000,000. */
  keepPerThread: CountBetween(0, MAX_KEEP_PER_THREAD),
  /**
   * Expiries are rounded up to a multiple of this, so an otherwise idle Object is woken for
   * retention at most once per window (which the Submissions it keeps, `keepPerThread`'s or
   * those still needed, cost it for good). 1,000 to 2,147,483,647 ms.
   */
  windowMillis: MillisFrom(1_000),
  /** How long one maintenance event may spend removing (and archiving) expired Submissions. */
  dispatchTimeoutMillis: AuxiliaryDispatchMillis,
}) {}

/**
 * The decoded configuration value: the runtime's settings and the Cloudflare host's. Every
 * duration is an integer from 1 to 2,147,483,647 ms (2^31 - 1, about 24.8 days, the longest
 * delay `setTimeout` takes) unless its own range says otherwise, so that no alarm is set past
 * what a `Date` holds.
 */
export class CloudflareDurableRuntimeConfigValue extends Schema.Class<CloudflareDurableRuntimeConfigValue>(
  "@effect-agent/platform-cloudflare/CloudflareConfig/CloudflareDurableRuntimeConfigValue",
)({
  ...DurableRuntimeSettings.fields,
  /** First maintenance backoff step; half of it is the minimum alarm delay. 1 to 2,147,483,647 ms. */
  alarmBackoffBase: PositiveMillis,
  /** The longest maintenance backoff step: `alarmBackoffBase` to 2,147,483,647 ms. */
  alarmBackoffCap: PositiveMillis,
  /**
   * Native maintenance cadence while a generation is dirty without a matching retry: 1 to
   * 2,147,483,647 ms.
   */
  wakeScanInterval: PositiveMillis,
  /**
   * Head Attempts one alarm event may serve, lanes in round-robin order, each Submission at most
   * once; a further head starts only within the event's first second. 1 is beta.96's one head
   * per event (`BETA96_PACING`). 1..10,000.
   */
  maxHeadsPerEvent: CountBetween(1, MAX_HEADS_PER_EVENT),
  /**
   * Timed waits (sleeps, retry backoffs) one alarm event may resume, in due order, beside the
   * lane heads; also how many the finish looks at to place the next alarm. 1..1,000.
   */
  maxTimersPerEvent: Schema.Int.check(
    Schema.isBetween({ minimum: 1, maximum: 1_000 }, { expected: "an integer between 1 and 1000" }),
  ),
  /**
   * Timers due within this many milliseconds of the earliest share one alarm delivery: none
   * fires early, each at most this late. 0..1,000.
   */
  timerCoalesceMillis: Schema.Int.check(
    Schema.isBetween(
      { minimum: 0, maximum: 1_000 },
      { expected: "an integer number of milliseconds between 0 and 1000" },
    ),
  ),
  /**
   * Events that may die (the Object killed: a step out of memory or CPU, or the host killed or
   * reset) with an Attempt of the same lane head in flight, in a row, before the next event
   * settles that head `failed` ("set aside: its Attempt killed its Object N times…") without
   * running it again. `"never"` (the default) serves it again at every event: a host killed
   * repeatedly while a long step runs counts the same, so a cap can fail work that would have
   * completed. Deaths are counted by the event after each, which notes its Attempts first.
   * 1..1,000 or `"never"`.
   */
  maxObjectKillsPerHead: Schema.Union([CountBetween(1, MAX_OBJECT_KILLS), Schema.Literal("never")]),
  projectionDispatchTimeoutMillis: AuxiliaryDispatchMillis,
  /** How long one delivery of a message to another Object may take before it is retried. */
  deliveryAttemptTimeoutMillis: AuxiliaryDispatchMillis,
  /**
   * First retry delay of a failed delivery; it doubles per attempt up to the cap. 1 to
   * 2,147,483,647 ms.
   */
  deliveryRetryBaseMillis: PositiveMillis,
  /** The longest retry delay of a failed delivery: `deliveryRetryBaseMillis` to 2,147,483,647 ms. */
  deliveryRetryCapMillis: PositiveMillis,
  limits: CloudflareRuntimeLimits,
  retention: RetentionPolicy,
}) {}

/** The encoded (plain) form of the configuration. */
export type CloudflareDurableRuntimeConfigInput = typeof CloudflareDurableRuntimeConfigValue.Encoded

/** The groups of fields that overrides may set in part. */
type NestedField = "limits" | "retention"

/** Partial overrides; `limits` and `retention` may themselves be partial. */
export type CloudflareDurableRuntimeConfigOverrides = {
  readonly [
    K in Exclude<keyof CloudflareDurableRuntimeConfigInput, NestedField>
  ]?: CloudflareDurableRuntimeConfigInput[K]
} & { readonly [K in NestedField]?: Partial<CloudflareDurableRuntimeConfigInput[K]> }

/** Defaults of every field: the runtime's and the ledger's own, and the host's. */
export const CLOUDFLARE_RUNTIME_DEFAULTS: CloudflareDurableRuntimeConfigInput = {
  ...DURABLE_RUNTIME_DEFAULTS,
  alarmBackoffBase: 100,
  alarmBackoffCap: 5_000,
  wakeScanInterval: 1_000,
  maxHeadsPerEvent: 1_000,
  maxTimersPerEvent: 16,
  timerCoalesceMillis: 10,
  maxObjectKillsPerHead: "never",
  projectionDispatchTimeoutMillis: 30_000,
  deliveryAttemptTimeoutMillis: 30_000,
  deliveryRetryBaseMillis: 1_000,
  deliveryRetryCapMillis: 60_000,
  limits: { ...LEDGER_LIMIT_DEFAULTS, maxDatabaseBytes: 9_000_000_000 },
  // Removing data is irreversible and ends its key's replay: it is the application's choice.
  retention: {
    settledForMillis: "forever",
    keepPerThread: 0,
    windowMillis: 3_600_000,
    dispatchTimeoutMillis: 2_000,
  },
}

/**
 * The original's (beta.96) pacing: one head Attempt per alarm event, the next event
 * `alarmBackoffBase` later while work remains, and a parent that awaits an unsettled child parks
 * at once. Spread it into the overrides to restore it; an Object then settles about
 * `1000 / alarmBackoffBase` Submissions per second.
 */
export const BETA96_PACING = {
  maxHeadsPerEvent: 1,
  childAwaitMillis: 0,
} as const satisfies CloudflareDurableRuntimeConfigOverrides

/**
 * The bytes of one SQLite row Cloudflare allows (2 MB). A Submission's row holds its input and,
 * once settled, its output: `limits.maxInputBytes` and `maxStoredValueBytes` together must leave
 * `ROW_OVERHEAD_BYTES` of it for the row's other columns, or an accepted Submission could never
 * write its settlement. (`core/internal/rowBytes.ts` holds the same bound for the runtime, which
 * refuses a child's input over it; a public module imports nothing from `internal/`.)
 */
const MAX_ROW_BYTES = 2_000_000
/** What a Submission's row holds besides its input and its output (ids, state, envelopes). */
const ROW_OVERHEAD_BYTES = 65_536

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
    // Own fields only: `constructor` or `__proto__` (JSON.parse makes it an own key) is unknown.
    const schema = Object.hasOwn(fields, key) ? fields[key] : undefined
    if (schema === undefined) {
      return new CloudflareConfigError({ field, message: `Unknown configuration field "${field}"` })
    }
    if (prefix === "" && (key === "limits" || key === "retention")) continue
    const decoded = Schema.decodeUnknownResult(schema)(value[key])
    if (Result.isFailure(decoded)) {
      return new CloudflareConfigError({ field, message: `Invalid "${field}": ${decoded.failure.message}` })
    }
  }
  return undefined
}

const isRecord = (value: unknown): value is Readonly<Record<string, unknown>> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** A cap below its first step, named by the cap. */
const capBelowBase = (cap: string, capValue: number, base: string, baseValue: number) =>
  capValue < baseValue
    ? new CloudflareConfigError({
        field: cap,
        message: `Invalid "${cap}": ${capValue} is below ${base} ${baseValue}`,
      })
    : undefined

/**
 * What no single field shows: a backoff cap below its first step, and an input and output bound
 * that do not fit one row (named by the input's when it was overridden).
 */
const crossFieldError = (
  config: CloudflareDurableRuntimeConfigValue,
  inputOverride: unknown,
): CloudflareConfigError | undefined => {
  // A cap below the first step would back off less than the alarm floor allows, and a pass
  // could then write an alarm earlier than its own prearm; a delivery would be retried at every
  // alarm it may set.
  const cap =
    capBelowBase("alarmBackoffCap", config.alarmBackoffCap, "alarmBackoffBase", config.alarmBackoffBase) ??
    capBelowBase(
      "deliveryRetryCapMillis",
      config.deliveryRetryCapMillis,
      "deliveryRetryBaseMillis",
      config.deliveryRetryBaseMillis,
    )
  if (cap !== undefined) return cap
  if (config.limits.maxInputBytes + config.maxStoredValueBytes <= MAX_ROW_BYTES - ROW_OVERHEAD_BYTES)
    return undefined
  const field = inputOverride !== undefined ? "limits.maxInputBytes" : "maxStoredValueBytes"
  return new CloudflareConfigError({
    field,
    message:
      `Invalid "${field}": limits.maxInputBytes (${config.limits.maxInputBytes}) plus maxStoredValueBytes ` +
      `(${config.maxStoredValueBytes}) must be at most ${MAX_ROW_BYTES - ROW_OVERHEAD_BYTES} bytes, ` +
      `so that a Submission's input and output fit one SQLite row (Cloudflare allows ${MAX_ROW_BYTES})`,
  })
}

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
    // Only a group left out takes its defaults: `null` is a bad value, refused below.
    const limits: unknown = input["limits"] === undefined ? {} : input["limits"]
    const retention: unknown = input["retention"] === undefined ? {} : input["retention"]
    for (const [field, value] of [
      ["limits", limits],
      ["retention", retention],
    ] as const) {
      if (!isRecord(value)) {
        return Effect.fail(
          new CloudflareConfigError({ field, message: `Invalid "${field}": expected an object` }),
        )
      }
    }
    const invalid =
      checkFields(input, CloudflareDurableRuntimeConfigValue.fields, "") ??
      checkFields(limits as Readonly<Record<string, unknown>>, CloudflareRuntimeLimits.fields, "limits.") ??
      checkFields(retention as Readonly<Record<string, unknown>>, RetentionPolicy.fields, "retention.")
    if (invalid !== undefined) return Effect.fail(invalid)
    const merged = {
      ...CLOUDFLARE_RUNTIME_DEFAULTS,
      ...input,
      limits: { ...CLOUDFLARE_RUNTIME_DEFAULTS.limits, ...(limits as object) },
      retention: { ...CLOUDFLARE_RUNTIME_DEFAULTS.retention, ...(retention as object) },
    }
    return Schema.decodeUnknownEffect(CloudflareDurableRuntimeConfigValue)(merged).pipe(
      Effect.mapError((error) => new CloudflareConfigError({ field: "", message: error.message })),
      Effect.flatMap((config) => {
        const invalid = crossFieldError(
          config,
          (limits as Readonly<Record<string, unknown>>)["maxInputBytes"],
        )
        return invalid === undefined ? Effect.succeed(config) : Effect.fail(invalid)
      }),
    )
  })

/** The configuration of this Object's runtime. */
export class CloudflareDurableRuntimeConfig extends Context.Service<
  CloudflareDurableRuntimeConfig,
  CloudflareDurableRuntimeConfigValue
>()("@effect-agent/platform-cloudflare/CloudflareConfig/CloudflareDurableRuntimeConfig") {
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

/**
 * The Worker variable that switches what the maintenance pass logs through Effect's logger:
 * `events` (one line per alarm event, and the warnings), `warnings` (a failed pass, a Thread
 * whose passes keep failing, an alarm delivered far later than scheduled; the default) or `off`.
 * Set it in `.dev.vars` for `wrangler dev` and in `[vars]` per environment.
 */
export const MAINTENANCE_LOG_VARIABLE = "EFFECT_AGENT_MAINTENANCE_LOG"

/**
 * What the maintenance pass logs; any other value of the variable reads as `warnings` (and each
 * incarnation warns of it once as it starts).
 */
export type MaintenanceLogSetting = "events" | "warnings" | "off"

/** The setting an Object's `env` selects (`warnings` when the variable is unset or unknown). */
export const maintenanceLogSetting = (env: object): MaintenanceLogSetting => {
  const value: unknown = Reflect.get(env, MAINTENANCE_LOG_VARIABLE)
  return value === "events" || value === "off" ? value : "warnings"
}
