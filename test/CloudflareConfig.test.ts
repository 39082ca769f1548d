import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Layer } from "effect"
import {
  BETA96_PACING,
  CLOUDFLARE_RUNTIME_DEFAULTS,
  CloudflareDurableRuntimeConfig,
  type CloudflareDurableRuntimeConfigOverrides,
  CloudflareDurableRuntimeConfigValue,
  CloudflareRuntimeLimits,
  decodeCloudflareRuntimeConfig,
} from "../src/CloudflareConfig.ts"
import {
  DURABLE_RUNTIME_DEFAULTS,
  DurableRuntimeConfig,
  DurableRuntimeSettings,
} from "../src/core/DurableRuntimeConfig.ts"
import { LEDGER_LIMIT_DEFAULTS, LedgerLimits } from "../src/core/SubmissionLedger.ts"

const failureOf = <A, E>(exit: Exit.Exit<A, E>) =>
  Exit.isFailure(exit) ? exit.cause.reasons.find((reason) => reason._tag === "Fail")?.error : undefined

describe("CloudflareDurableRuntimeConfig", () => {
  it.effect("takes the defaults when nothing is overridden: the original's, but 1,000 heads", () =>
    Effect.gen(function* () {
      const config = yield* decodeCloudflareRuntimeConfig()
      expect(config).toMatchObject({
        alarmBackoffBase: 100,
        alarmBackoffCap: 5_000,
        wakeScanInterval: 1_000,
        maxHeadsPerEvent: 1_000,
        maxTimersPerEvent: 16,
        timerCoalesceMillis: 10,
        maxObjectKillsPerHead: "never",
        projectionDispatchTimeoutMillis: 30_000,
        ownershipLeaseDuration: 30_000,
        settlementPollInterval: 500,
        leaseRenewalInterval: 10_000,
        abortPollInterval: 500,
        maxStoredValueBytes: 131_072,
        limits: { maxQueueDepthPerLane: 256, maxDatabaseBytes: 9_000_000_000 },
      })
      const layered = yield* Effect.provide(
        Effect.gen(function* () {
          return yield* CloudflareDurableRuntimeConfig
        }),
        CloudflareDurableRuntimeConfig.layerDefault,
      )
      expect(layered).toEqual(config)
    }),
  )

  it.effect("is composed of the runtime's settings and the ledger's limits, with their defaults", () =>
    Effect.gen(function* () {
      const config = yield* decodeCloudflareRuntimeConfig()
      expect(config).toMatchObject({ ...DURABLE_RUNTIME_DEFAULTS, limits: LEDGER_LIMIT_DEFAULTS })
      expect(Object.keys(CloudflareDurableRuntimeConfigValue.fields)).toEqual(
        expect.arrayContaining(Object.keys(DurableRuntimeSettings.fields)),
      )
      expect(Object.keys(CloudflareRuntimeLimits.fields)).toEqual(
        expect.arrayContaining(Object.keys(LedgerLimits.fields)),
      )
    }),
  )

  it.effect(
    "restores the original's one head per event and its park at once with BETA96_PACING, and nothing else",
    () =>
      Effect.gen(function* () {
        const defaults = yield* decodeCloudflareRuntimeConfig()
        const config = yield* decodeCloudflareRuntimeConfig({ ...BETA96_PACING })
        expect(config.maxHeadsPerEvent).toBe(1)
        expect(config.childAwaitMillis).toBe(0)
        expect(defaults.childAwaitMillis).toBe(250)
        expect({
          ...config,
          maxHeadsPerEvent: defaults.maxHeadsPerEvent,
          childAwaitMillis: defaults.childAwaitMillis,
        }).toEqual({ ...defaults })
      }),
  )

  it.effect("merges partial overrides, limits included, over the defaults", () =>
    Effect.gen(function* () {
      const config = yield* decodeCloudflareRuntimeConfig({
        alarmBackoffBase: 10,
        limits: { maxQueueDepthPerLane: 3 },
      })
      expect(config.alarmBackoffBase).toBe(10)
      expect(config.alarmBackoffCap).toBe(CLOUDFLARE_RUNTIME_DEFAULTS.alarmBackoffCap)
      expect(config.limits).toMatchObject({ maxQueueDepthPerLane: 3, maxInputBytes: 1_048_576 })
    }),
  )

  it.effect("keeps settled Submissions forever by default and merges a partial retention", () =>
    Effect.gen(function* () {
      expect((yield* decodeCloudflareRuntimeConfig()).retention).toMatchObject({
        settledForMillis: "forever",
        keepPerThread: 0,
      })
      const config = yield* decodeCloudflareRuntimeConfig({ retention: { settledForMillis: 60_000 } })
      expect(config.retention).toMatchObject({
        settledForMillis: 60_000,
        keepPerThread: 0,
        windowMillis: CLOUDFLARE_RUNTIME_DEFAULTS.retention.windowMillis,
      })
    }),
  )

  const invalid: ReadonlyArray<readonly [string, unknown, string]> = [
    ["a zero backoff base", { alarmBackoffBase: 0 }, "alarmBackoffBase"],
    ["a backoff cap below its base", { alarmBackoffBase: 200, alarmBackoffCap: 100 }, "alarmBackoffCap"],
    // A failed delivery would be retried at the cap, below the first step: every alarm it may set.
    [
      "a delivery retry cap below its base",
      { deliveryRetryBaseMillis: 1_000, deliveryRetryCapMillis: 1 },
      "deliveryRetryCapMillis",
    ],
    [
      "a delivery retry base above the default cap",
      { deliveryRetryBaseMillis: 120_000 },
      "deliveryRetryCapMillis",
    ],
    ["a fractional scan interval", { wakeScanInterval: 1.5 }, "wakeScanInterval"],
    [
      "a projection allowance over 5 minutes",
      { projectionDispatchTimeoutMillis: 300_001 },
      "projectionDispatchTimeoutMillis",
    ],
    ["a string lease", { ownershipLeaseDuration: "30s" }, "ownershipLeaseDuration"],
    ["a zero stored-value bound", { maxStoredValueBytes: 0 }, "maxStoredValueBytes"],
    ["zero heads per event", { maxHeadsPerEvent: 0 }, "maxHeadsPerEvent"],
    ["a fractional head count", { maxHeadsPerEvent: 2.5 }, "maxHeadsPerEvent"],
    ["a head count as a string", { maxHeadsPerEvent: "8" }, "maxHeadsPerEvent"],
    ["zero timers per event", { maxTimersPerEvent: 0 }, "maxTimersPerEvent"],
    ["more than 1,000 timers per event", { maxTimersPerEvent: 1_001 }, "maxTimersPerEvent"],
    ["no Object kills per head", { maxObjectKillsPerHead: 0 }, "maxObjectKillsPerHead"],
    ["negative Object kills per head", { maxObjectKillsPerHead: -1 }, "maxObjectKillsPerHead"],
    ["fractional Object kills per head", { maxObjectKillsPerHead: 1.5 }, "maxObjectKillsPerHead"],
    ["Object kills per head named otherwise", { maxObjectKillsPerHead: "always" }, "maxObjectKillsPerHead"],
    ["Object kills per head as a string", { maxObjectKillsPerHead: "3" }, "maxObjectKillsPerHead"],
    ["a negative timer coalescing window", { timerCoalesceMillis: -1 }, "timerCoalesceMillis"],
    ["a timer coalescing window over a second", { timerCoalesceMillis: 1_001 }, "timerCoalesceMillis"],
    ["a fractional database limit", { limits: { maxDatabaseBytes: 1.5 } }, "limits.maxDatabaseBytes"],
    // Past Cloudflare's 10 GB an Object's writes fail before the limit refuses any new work.
    [
      "a database limit above Cloudflare's 10 GB",
      { limits: { maxDatabaseBytes: 20_000_000_000 } },
      "limits.maxDatabaseBytes",
    ],
    // A Submission's row holds its input and its output: both must fit Cloudflare's 2 MB row, or
    // an accepted Submission could never write its settlement (its passes would fail for good).
    [
      "an input limit that leaves the output no room in a row",
      { limits: { maxInputBytes: 1_900_000 } },
      "limits.maxInputBytes",
    ],
    ["an input limit over a row", { limits: { maxInputBytes: 4_194_304 } }, "limits.maxInputBytes"],
    ["a stored-value bound past any row", { maxStoredValueBytes: 9e15 }, "maxStoredValueBytes"],
    [
      "a stored-value bound that leaves the input no room in a row",
      { maxStoredValueBytes: 1_000_000 },
      "maxStoredValueBytes",
    ],
    // Options the runtime would ignore are not accepted at all.
    ["the unsupported observationPollInterval", { observationPollInterval: 25 }, "observationPollInterval"],
    ["the unsupported deploymentId", { deploymentId: "prod" }, "deploymentId"],
    ["the unsupported producerPrefix", { producerPrefix: "cf" }, "producerPrefix"],
    ["the unsupported verifyOnOpen", { verifyOnOpen: true }, "verifyOnOpen"],
    ["a zero queue depth", { limits: { maxQueueDepthPerLane: 0 } }, "limits.maxQueueDepthPerLane"],
    ["limits that are not an object", { limits: 5 }, "limits"],
    ["an unknown field", { alarmBackofBase: 10 }, "alarmBackofBase"],
    ["an unknown limit", { limits: { maxQueue: 1 } }, "limits.maxQueue"],
    ["a retention of zero", { retention: { settledForMillis: 0 } }, "retention.settledForMillis"],
    [
      "a retention named otherwise",
      { retention: { settledForMillis: "never" } },
      "retention.settledForMillis",
    ],
    ["a negative keepPerThread", { retention: { keepPerThread: -1 } }, "retention.keepPerThread"],
    ["a zero retention window", { retention: { windowMillis: 0 } }, "retention.windowMillis"],
    // A window under a second would wake an idle Object for retention at every alarm it may set.
    ["a retention window under a second", { retention: { windowMillis: 1 } }, "retention.windowMillis"],
    ["retention that is not an object", { retention: "30d" }, "retention"],
    ["an unknown retention field", { retention: { keepDays: 30 } }, "retention.keepDays"],
  ]

  /**
   * Every duration and count with its largest accepted value. Past them alarm arithmetic breaks
   * (`now + 9e15` is no `Date`, which `setAlarm` needs) or a single event, row or scan grows
   * without bound; a duration is at most setTimeout's longest delay, 2^31 - 1 ms.
   */
  const TIMER_MAX = 2_147_483_647
  const maxima: ReadonlyArray<readonly [string, number, CloudflareDurableRuntimeConfigOverrides]> = [
    ["ownershipLeaseDuration", TIMER_MAX, {}],
    ["leaseRenewalInterval", TIMER_MAX, {}],
    ["settlementPollInterval", TIMER_MAX, {}],
    ["abortPollInterval", TIMER_MAX, {}],
    ["alarmBackoffBase", TIMER_MAX, { alarmBackoffCap: TIMER_MAX }],
    ["alarmBackoffCap", TIMER_MAX, {}],
    ["wakeScanInterval", TIMER_MAX, {}],
    ["deliveryRetryBaseMillis", TIMER_MAX, { deliveryRetryCapMillis: TIMER_MAX }],
    ["deliveryRetryCapMillis", TIMER_MAX, {}],
    ["maxHeadsPerEvent", 10_000, {}],
    ["maxObjectKillsPerHead", 1_000, {}],
    ["limits.maxQueueDepthPerLane", 100_000, {}],
    ["retention.settledForMillis", 315_360_000_000, {}],
    ["retention.keepPerThread", 1_000_000, {}],
    ["retention.windowMillis", TIMER_MAX, {}],
  ]

  /** `base` with `field` (a dotted path) set to `value`. */
  const withField = (base: CloudflareDurableRuntimeConfigOverrides, field: string, value: unknown) => {
    const [group, key] = field.split(".")
    if (key === undefined) return { ...base, [field]: value } as CloudflareDurableRuntimeConfigOverrides
    const groupName = group as "limits" | "retention"
    return {
      ...base,
      [groupName]: { ...base[groupName], [key]: value },
    } as CloudflareDurableRuntimeConfigOverrides
  }

  it.effect.each(maxima)(
    "accepts %s up to %d and refuses one more, naming the field and the limit",
    ([field, maximum, base]) =>
      Effect.gen(function* () {
        const config = yield* decodeCloudflareRuntimeConfig(withField(base, field, maximum))
        const [group, key] = field.split(".")
        const decoded: unknown =
          key === undefined
            ? config[field as keyof typeof config]
            : Reflect.get(config[group as "limits" | "retention"], key)
        expect(decoded).toBe(maximum)
        for (const beyond of [maximum + 1, 9e15]) {
          const failure = yield* Effect.flip(decodeCloudflareRuntimeConfig(withField(base, field, beyond)))
          expect(failure).toMatchObject({ _tag: "CloudflareConfigError", field })
          expect(failure.message).toContain(field)
          expect(failure.message).toContain(String(maximum))
        }
      }),
  )

  it.effect("refuses a runtime setting beyond its maximum in the runtime's own layer too", () =>
    Effect.gen(function* () {
      const exit = yield* Effect.exit(
        Layer.build(DurableRuntimeConfig.layer({ ownershipLeaseDuration: 9e15 })).pipe(Effect.scoped),
      )
      expect(failureOf(exit)?.message).toContain("2147483647")
      // Without CloudflareConfig's check of input and output together, a value still fits one row.
      const stored = yield* Effect.exit(
        Layer.build(DurableRuntimeConfig.layer({ maxStoredValueBytes: 2_000_000 })).pipe(Effect.scoped),
      )
      expect(failureOf(stored)?.message).toContain("1934464")
    }),
  )

  it.effect.each(invalid)(
    "refuses %s with a CloudflareConfigError naming the field",
    ([, overrides, field]) =>
      Effect.gen(function* () {
        const exit = yield* Effect.exit(
          decodeCloudflareRuntimeConfig(overrides as CloudflareDurableRuntimeConfigOverrides),
        )
        const failure = failureOf(exit)
        expect(failure).toMatchObject({ _tag: "CloudflareConfigError", field })
        expect(failure?.message).toContain(field)
        // The layer fails the same way, before any resource opens.
        const layered = yield* Effect.exit(
          Layer.build(
            CloudflareDurableRuntimeConfig.layer(overrides as CloudflareDurableRuntimeConfigOverrides),
          ).pipe(Effect.scoped),
        )
        expect(failureOf(layered)).toMatchObject({ _tag: "CloudflareConfigError", field })
      }),
  )
})
