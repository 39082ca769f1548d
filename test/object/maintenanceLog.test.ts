import { env, runInDurableObject } from "cloudflare:test"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Logger, References } from "effect"
import { afterEach, vi } from "vitest"
import { MAINTENANCE_LOG_VARIABLE, maintenanceLogSetting } from "../../src/CloudflareConfig.ts"
import { DurableAlarmError, ThreadHostMaintenanceError } from "../../src/internal/maintenance/errors.ts"
import { MaintenancePassReport } from "../../src/internal/maintenance/report.ts"
import { MAINTENANCE_STATE_KEY } from "../../src/internal/maintenance/state.ts"
import {
  LATE_ALARM_WARNING_MILLIS,
  type LoggedStorage,
  logMaintenanceEvent,
  objectLabel,
} from "../../src/internal/observability/maintenanceLog.ts"
import { DurableRuntimeFailpointError } from "../../src/Testing.ts"
import { clientOf, deliverUntil, stubOf, threadName } from "./support.ts"
import { switchboard, TestThreadObject } from "../worker/threadObject.ts"

interface Line {
  readonly level: string
  readonly text: string
  readonly annotations: Record<string, unknown>
}

/** Runs `effect` with a logger that keeps every line instead of printing it. */
const captured = <A, E>(effect: Effect.Effect<A, E>) =>
  Effect.gen(function* () {
    const lines: Array<Line> = []
    const logger = Logger.make(({ message, logLevel, fiber }) => {
      const parts = Array.isArray(message) ? message : [message]
      lines.push({
        level: logLevel,
        text: parts.map(String).join(" "),
        annotations: { ...fiber.getRef(References.CurrentLogAnnotations) },
      })
    })
    yield* Effect.provide(effect, Logger.layer([logger]))
    return lines
  })

/** Storage that holds `record` and `alarm` and counts what the log reads. */
const storageWith = (record: unknown, alarm: number | null) => {
  const reads = { kv: 0, alarm: 0 }
  const storage: LoggedStorage = {
    kv: {
      get: (key) => {
        reads.kv++
        return key === MAINTENANCE_STATE_KEY ? record : undefined
      },
    },
    getAlarm: async () => {
      reads.alarm++
      return alarm
    },
  }
  return { storage, reads, object: { storage, name: "support" } }
}

const settledOne = Exit.succeed(
  MaintenancePassReport.make({
    phase: "actionable",
    recovered: 0,
    settled: 1,
    nonterminal: 2,
    alarm: "rearmed",
  }),
)
const retryAt = 400 // TestClock: now is 0
/** A record after three failed passes in a row, the last Thread served "orders". */
const failingRecord = {
  schemaVersion: 1,
  dirty: "7",
  processed: "6",
  nonterminal: 1,
  lastServedThreadId: "orders",
  retry: { generation: "7", notBefore: retryAt, nativeOnly: true, stalls: 3 },
}

const failed = Exit.fail(new DurableAlarmError({ operation: "claim", message: "storage refused the claim" }))

describe("maintenance log", () => {
  it("reads the variable: events, warnings or off, and warnings when unset or unknown", () => {
    expect(maintenanceLogSetting({ [MAINTENANCE_LOG_VARIABLE]: "events" })).toBe("events")
    expect(maintenanceLogSetting({ [MAINTENANCE_LOG_VARIABLE]: "off" })).toBe("off")
    expect(maintenanceLogSetting({})).toBe("warnings")
    expect(maintenanceLogSetting({ [MAINTENANCE_LOG_VARIABLE]: "verbose" })).toBe("warnings")
  })

  it.effect("writes one line per event with what it settled and the next alarm, under events", () =>
    Effect.gen(function* () {
      // TestClock: now is 0.
      const { storage } = storageWith(undefined, 100)
      const lines = yield* captured(
        logMaintenanceEvent("events", { storage, name: "support" }, settledOne, 3),
      )
      expect(lines).toHaveLength(1)
      expect(lines[0]).toMatchObject({
        level: "Info",
        annotations: { phase: "actionable", settled: 1, recovered: 0, nonterminal: 2, lagMillis: 3 },
      })
      expect(lines[0]?.text).toMatch(
        /^Thread maintenance of "support" ran: 1 settled, 0 recovered, 2 unsettled left; next alarm in 100 ms$/,
      )
      const quiet = storageWith(undefined, null).object
      const caughtUp = Exit.succeed(
        MaintenancePassReport.make({
          phase: "caught-up",
          recovered: 0,
          settled: 0,
          nonterminal: 0,
          alarm: "cleared",
        }),
      )
      const [line] = yield* captured(logMaintenanceEvent("events", quiet, caughtUp, undefined))
      expect(line?.text).toBe(
        'Thread maintenance of "support" caught up (no runtime work due); no alarm (nothing owed)',
      )
    }),
  )

  it("names an Object by its name, or by the start of its id", () => {
    expect(objectLabel({ name: "desk-1", toString: () => "ab".repeat(32) })).toBe("desk-1")
    expect(objectLabel({ toString: () => "ab".repeat(32) })).toBe("abababababab…")
  })

  it.effect("logs nothing for a healthy event under warnings, and reads no storage for it", () =>
    Effect.gen(function* () {
      const { storage, reads } = storageWith(undefined, 1)
      expect(
        yield* captured(logMaintenanceEvent("warnings", { storage, name: "support" }, settledOne, 10)),
      ).toEqual([])
      expect(reads).toEqual({ kv: 0, alarm: 0 })
    }),
  )

  it.effect("warns of a failed pass with its streak, its retry and the Thread that keeps failing", () =>
    Effect.gen(function* () {
      const record = failingRecord
      const lines = yield* captured(
        logMaintenanceEvent("warnings", storageWith(record, retryAt).object, failed, 0),
      )
      expect(lines).toHaveLength(1)
      expect(lines[0]?.level).toBe("Warn")
      expect(lines[0]?.text).toMatch(
        /^Thread maintenance of "support": the pass failed \(3 in a row\); Thread "orders" keeps failing; retry in 400 ms: DurableAlarmError: storage refused the claim$/,
      )
      expect(lines[0]?.annotations).toMatchObject({ failedInARow: 3, lastThread: "orders" })
      // One failure is not a failing Thread yet.
      const once = { ...record, retry: { ...record.retry, stalls: 1 } }
      const [first] = yield* captured(
        logMaintenanceEvent("warnings", storageWith(once, retryAt).object, failed, 0),
      )
      expect(first?.text).toMatch(
        /^Thread maintenance of "support": the pass failed \(1 in a row\); retry in/,
      )
    }),
  )

  it.effect("names the hook that failed the pass, not the last Thread it served", () =>
    Effect.gen(function* () {
      const record = failingRecord
      const hookFailed = Exit.fail(
        new ThreadHostMaintenanceError({
          hook: "refund-outbox",
          operation: "dispatch a wave",
          message: "the relay answered 503",
        }),
      )
      const [line] = yield* captured(
        logMaintenanceEvent("warnings", storageWith(record, retryAt).object, hookFailed, 0),
      )
      expect(line?.text).toContain('the hook "refund-outbox" failed to dispatch a wave')
      expect(line?.text).not.toContain("orders")
      expect(line?.annotations).toMatchObject({ failedInARow: 3, hook: "refund-outbox" })
    }),
  )

  it.effect("warns of an alarm that ran far later than scheduled, and is silent when off", () =>
    Effect.gen(function* () {
      const { storage, reads } = storageWith(undefined, null)
      const late = yield* captured(
        logMaintenanceEvent(
          "warnings",
          { storage, name: "support" },
          settledOne,
          LATE_ALARM_WARNING_MILLIS + 1,
        ),
      )
      expect(late.map((line) => line.level)).toEqual(["Warn"])
      expect(late[0]?.text).toMatch(
        /^Thread maintenance of "support": its alarm ran 30\.0 s after its scheduled time/,
      )
      expect(
        yield* captured(logMaintenanceEvent("off", { storage, name: "support" }, failed, 60_000)),
      ).toEqual([])
      expect(reads).toEqual({ kv: 0, alarm: 0 })
    }),
  )
})

describe("maintenance log in a ThreadObject", () => {
  afterEach(() => {
    vi.restoreAllMocks()
  })

  it.live("warns once an incarnation starts when the variable is none of the settings", () =>
    Effect.gen(function* () {
      const printed: Array<string> = []
      vi.spyOn(console, "log").mockImplementation((...parts: Array<unknown>) => {
        printed.push(parts.map(String).join(" "))
      })
      const started = (value: unknown) =>
        Effect.promise(() =>
          runInDurableObject(stubOf(threadName("log-setting")), async (_instance, state) => {
            // A fresh incarnation over the same storage, with the variable set as a Worker would.
            new TestThreadObject(state, { ...env, [MAINTENANCE_LOG_VARIABLE]: value } as Cloudflare.Env)
            await state.blockConcurrencyWhile(async () => {})
          }),
        )
      yield* started("Events")
      yield* started(true)
      const warnings = printed.filter((line) => line.includes(MAINTENANCE_LOG_VARIABLE))
      expect(warnings).toHaveLength(2)
      expect(warnings[0]).toContain(
        `${MAINTENANCE_LOG_VARIABLE} is "Events", not "events", "warnings" or "off": maintenance logs warnings only`,
      )
      expect(warnings[1]).toContain(`${MAINTENANCE_LOG_VARIABLE} is a boolean`)
      // The settings themselves, and no setting at all, are not worth a line.
      for (const value of ["events", "warnings", "off", undefined]) yield* started(value)
      expect(printed.filter((line) => line.includes(MAINTENANCE_LOG_VARIABLE))).toHaveLength(2)
    }),
  )

  it.live("warns through the Object's logger when a pass fails (the default setting)", () =>
    Effect.gen(function* () {
      expect(maintenanceLogSetting(env)).toBe("warnings")
      const thread = threadName("log")
      const id = stubOf(thread).id
      switchboard.install(id, {
        runtime: (location) =>
          location === "claim:after-claim"
            ? Effect.fail(new DurableRuntimeFailpointError({ location, message: "injected by the test" }))
            : Effect.void,
      })
      const printed: Array<string> = []
      // The test and the Object share the isolate, so the Object's console is this one.
      vi.spyOn(console, "log").mockImplementation((...parts: Array<unknown>) => {
        printed.push(parts.map(String).join(" "))
      })
      yield* clientOf(thread).submit({ agentId: "echo", idempotencyKey: "k", input: { text: "x" } })
      // The pool may deliver the alarm itself meanwhile: deliver until a failed pass has logged.
      yield* deliverUntil(
        thread,
        Effect.sync(() => printed.some((line) => line.includes(": the pass failed (1 in a row)"))),
        20,
      ).pipe(Effect.ensuring(Effect.sync(() => switchboard.remove(id))))
    }),
  )
})
