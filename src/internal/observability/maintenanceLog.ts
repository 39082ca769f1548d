/**
 * What a maintenance event tells the person watching the Worker's logs, through Effect's
 * logger: with `events`, one line per alarm event (what it ran and settled, the next alarm);
 * with `events` or `warnings`, a warning when a pass failed (with how many times in a row and
 * the Thread of its last head Attempt) or when an alarm ran far later than scheduled.
 *
 * A healthy event under `warnings` reads nothing from storage, so the default costs nothing; a
 * failed one reads the maintenance record (one KV key) for its retry. `events` also reads the
 * alarm slot after every event.
 */
import { Cause, Clock, Effect, Exit } from "effect"
import { MAINTENANCE_LOG_VARIABLE, type MaintenanceLogSetting } from "../../CloudflareConfig.ts"
import { safeCauseMessage } from "../boundary.ts"
import { ThreadHostMaintenanceError } from "../maintenance/errors.ts"
import type { MaintenancePassReport } from "../maintenance/report.ts"
import { applicableRetry, decodeMaintenanceRecord, MAINTENANCE_STATE_KEY } from "../maintenance/state.ts"

/** @internal An alarm that runs this much later than scheduled is reported. */
export const LATE_ALARM_WARNING_MILLIS = 30_000

/** @internal From this many failed passes in a row on the same owed work, the Thread is named as failing. */
export const FAILING_STREAK = 3

/** @internal What the log reads from the Object's storage. */
export interface LoggedStorage {
  readonly kv: { readonly get: (key: string) => unknown }
  readonly getAlarm: () => Promise<number | null>
}

/** @internal The Object a line is about: its storage, and its name (or id) to print. */
export interface LoggedObject {
  readonly storage: LoggedStorage
  readonly name: string
}

/** @internal How an Object is named in a line: its name when it has one, else its id's start. */
export const objectLabel = (id: { readonly name?: string; toString(): string }): string =>
  id.name ?? `${id.toString().slice(0, 12)}…`

const inMillis = (millis: number) =>
  millis < 1_000 ? `${Math.round(millis)} ms` : `${(millis / 1_000).toFixed(1)} s`

const nextAlarmText = (alarm: number | null | undefined, now: number) =>
  alarm === undefined
    ? "the alarm slot could not be read"
    : alarm === null
      ? "no alarm (nothing owed)"
      : `next alarm in ${inMillis(Math.max(0, alarm - now))}`

const storedRecord = (storage: LoggedStorage) => {
  try {
    const raw = storage.kv.get(MAINTENANCE_STATE_KEY)
    const decoded = raw === undefined ? undefined : decodeMaintenanceRecord(raw)
    return decoded?._tag === "Ok" ? decoded.state : undefined
  } catch {
    // The line is still worth writing without the record's retry.
    return undefined
  }
}

/** The first failure of an application's hook in `cause`, if any. */
const hookFailureOf = (cause: Cause.Cause<unknown>) => {
  for (const reason of cause.reasons) {
    if (Cause.isFailReason(reason) && reason.error instanceof ThreadHostMaintenanceError) return reason.error
  }
  return undefined
}

const failureText = (
  exit: Exit.Exit<MaintenancePassReport, unknown>,
  storage: LoggedStorage,
  now: number,
) => {
  const message = Exit.isFailure(exit) ? safeCauseMessage(exit.cause, "unknown failure") : ""
  const record = storedRecord(storage)
  const retry = record === undefined ? undefined : applicableRetry(record)
  const streak = retry?.stalls ?? 1
  const lane = record?.lastServedThreadId
  // A hook's failure is the hook's, not the last Thread served.
  const hook = Exit.isFailure(exit) ? hookFailureOf(exit.cause) : undefined
  const failing =
    hook !== undefined
      ? `; the hook "${hook.hook}" failed to ${hook.operation}`
      : streak >= FAILING_STREAK && lane !== undefined
        ? `; Thread "${lane}" keeps failing`
        : ""
  const next =
    retry === undefined
      ? "workerd redelivers the alarm"
      : `retry in ${inMillis(Math.max(0, retry.notBefore - now))}`
  return {
    text: `the pass failed (${streak} in a row)${failing}; ${next}: ${message}`,
    annotations: {
      failedInARow: streak,
      ...(hook !== undefined ? { hook: hook.hook } : lane === undefined ? {} : { lastThread: lane }),
      ...(retry === undefined ? {} : { retryAt: new Date(retry.notBefore).toISOString() }),
    },
  }
}

/**
 * @internal A warning, once per incarnation, when the Object's `EFFECT_AGENT_MAINTENANCE_LOG` is
 * set to a value that is none of the settings (it then reads as `warnings`): a misspelt `events`
 * would otherwise go unnoticed.
 */
export const warnUnknownLogSetting = (env: object): Effect.Effect<void> => {
  const value: unknown = Reflect.get(env, MAINTENANCE_LOG_VARIABLE)
  if (value === undefined || value === "events" || value === "warnings" || value === "off") return Effect.void
  const shown = typeof value === "string" ? JSON.stringify(value) : `a ${typeof value}`
  return Effect.logWarning(
    `${MAINTENANCE_LOG_VARIABLE} is ${shown}, not "events", "warnings" or "off": maintenance logs warnings only`,
  ).pipe(Effect.annotateLogs({ variable: MAINTENANCE_LOG_VARIABLE }))
}

/** @internal Logs one maintenance event as `setting` asks. */
export const logMaintenanceEvent = (
  setting: MaintenanceLogSetting,
  object: LoggedObject,
  exit: Exit.Exit<MaintenancePassReport, unknown>,
  lagMillis: number | undefined,
): Effect.Effect<void> =>
  Effect.gen(function* () {
    if (setting === "off") return
    const { storage } = object
    const about = `Thread maintenance of ${JSON.stringify(object.name)}`
    const now = yield* Clock.currentTimeMillis
    if (lagMillis !== undefined && lagMillis > LATE_ALARM_WARNING_MILLIS) {
      yield* Effect.logWarning(
        `${about}: its alarm ran ${inMillis(lagMillis)} after its scheduled time (the Object was evicted, busy or down)`,
      ).pipe(Effect.annotateLogs({ lagMillis }))
    }
    if (Exit.isFailure(exit)) {
      const failure = failureText(exit, storage, now)
      return yield* Effect.logWarning(`${about}: ${failure.text}`).pipe(
        Effect.annotateLogs(failure.annotations),
      )
    }
    if (setting !== "events") return
    const report = exit.value
    const alarm = yield* Effect.tryPromise(() => storage.getAlarm()).pipe(
      Effect.orElseSucceed(() => undefined),
    )
    const ran =
      report.phase === "caught-up"
        ? "caught up (no runtime work due)"
        : `ran: ${report.settled} settled, ${report.recovered} recovered, ${report.nonterminal} unsettled left`
    yield* Effect.logInfo(`${about} ${ran}; ${nextAlarmText(alarm, now)}`).pipe(
      Effect.annotateLogs({
        phase: report.phase,
        settled: report.settled,
        recovered: report.recovered,
        nonterminal: report.nonterminal,
        ...(alarm === undefined ? {} : { nextAlarm: alarm === null ? null : new Date(alarm).toISOString() }),
        ...(lagMillis === undefined ? {} : { lagMillis: Math.max(0, lagMillis) }),
      }),
    )
  })
