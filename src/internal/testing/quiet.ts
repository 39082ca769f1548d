/**
 * Delivering alarms in a test until the Object is quiet. In the vitest pool (and Miniflare)
 * workerd delivers due alarms by itself as well, so a test that calls `runDurableObjectAlarm`
 * races it: the call finds the slot empty while the pool's own pass runs, or the test reads
 * state in the middle of that pass. This loop decides from what the Object owes
 * (`obligations`), waits while a pass runs, never runs an alarm before its work is due (nor
 * before the alarm the Object set, when that is later), and counts a delivery whose pass failed
 * as delivered (workerd would redeliver it). Work owed with no alarm set is waited for too (the
 * pool may be starting its delivery); if it stays so, the loop fails at its bound, since nothing
 * would ever run it.
 *
 * It measures real time on purpose: the alarms it races are real workerd alarms, whatever
 * clock the test's own Effects use.
 */
import { Effect, Option, Schema } from "effect"
import { ObjectObligations } from "../operator/reports.ts"

/** @internal How long the loop waits before looking again at an Object whose pass runs. */
export const QUIET_POLL_MILLIS = 10

/** @internal The least time an `obligations` read is given, even when it starts at the bound. */
export const READ_GRACE_MILLIS = 250

/** What `runAlarmsUntilQuiet` needs of the Object, and how it delivers its alarm. */
export interface QuietOptions<E> {
  /**
   * A client of any Thread of the Object (`ThreadClient.make`); with an `authorization` policy
   * that covers reads, one whose caller may read `obligations`.
   */
  readonly client: { readonly obligations: Effect.Effect<ObjectObligations, E> }
  /**
   * Runs the Object's alarm now, if one is set: `() => runDurableObjectAlarm(stub)` from
   * `cloudflare:test`. A rejection (the pass failed) counts as a delivery.
   */
  readonly runAlarm: () => Promise<boolean>
  /** Most deliveries this loop makes (default 50); the pool's own are not counted. */
  readonly maxDeliveries?: number
  /** How long it may take in all, in real milliseconds (default 4,000: under vitest's 5 s test timeout). */
  readonly timeoutMillis?: number
}

/** The Object is quiet: what the loop did, and what the Object owed at the end. */
export interface QuietObject {
  /** Alarm deliveries the loop made (a pass that failed included). */
  readonly deliveries: number
  /** Deliveries whose pass failed. */
  readonly failedDeliveries: number
  /** The last reading: no pass running and nothing owed (an alarm may remain, a harmless extra wake). */
  readonly obligations: ObjectObligations
}

/**
 * The Object was not quiet within the bound; `obligations` is what it still owed, by its last
 * answer (absent when it never answered, as an incarnation held in its constructor gate).
 */
export class AlarmsNotQuiet extends Schema.TaggedError<AlarmsNotQuiet>()("AlarmsNotQuiet", {
  deliveries: Schema.Int,
  message: Schema.String,
  obligations: Schema.optionalKey(ObjectObligations),
}) {}

const sleep = (millis: number) =>
  Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, Math.max(0, millis))))

/**
 * @internal Whether the Object has nothing left for its alarm to do. An empty alarm slot alone
 * does not say so: workerd empties the slot when it starts a delivery, a moment before the
 * handler's pass counts as running.
 */
export const isQuiet = (owed: ObjectObligations): boolean =>
  !owed.passRunning && owed.obligations.length === 0 && (owed.unreadDeadlines ?? []).length === 0

const summary = (owed: ObjectObligations) =>
  [
    ...owed.obligations.map((obligation) => `${obligation.source} (${obligation.detail})`),
    ...(owed.unreadDeadlines ?? []).map(
      (unread) => `${unread.source} of "${unread.hook}" unread (${unread.message})`,
    ),
    ...(owed.passRunning ? ["a pass still running"] : []),
    ...(owed.scheduledAlarm === null && owed.obligations.length > 0 ? ["no alarm set for it"] : []),
  ].join(", ")

/**
 * Delivers the Object's alarm until it is quiet: no pass running and nothing owed (a stable
 * wait, such as a pending approval, owes nothing). Work due later (a retry, a lease) is waited
 * for, not run early. Fails with `AlarmsNotQuiet` past `maxDeliveries` or `timeoutMillis`.
 */
export const runAlarmsUntilQuiet = <E>(
  options: QuietOptions<E>,
): Effect.Effect<QuietObject, AlarmsNotQuiet | E> =>
  Effect.gen(function* () {
    const maxDeliveries = options.maxDeliveries ?? 50
    const deadline = Date.now() + (options.timeoutMillis ?? 4_000)
    let deliveries = 0
    let failedDeliveries = 0
    let last: ObjectObligations | undefined
    for (;;) {
      // Past the bound with a reading in hand (a wait slept up to it): that reading answers.
      if (last !== undefined && Date.now() >= deadline) {
        return yield* new AlarmsNotQuiet({
          deliveries,
          message: `not quiet after ${deliveries} deliveries (out of time): ${summary(last)}`,
          obligations: last,
        })
      }
      // The read is bounded too: an Object that answers nothing (held in its constructor gate)
      // must not outlast the bound by more than a read's grace.
      const read = yield* Effect.raceFirst(
        Effect.asSome(options.client.obligations),
        Effect.as(
          sleep(Math.max(deadline - Date.now(), READ_GRACE_MILLIS)),
          Option.none<ObjectObligations>(),
        ),
      )
      if (Option.isNone(read)) {
        const previous = last === undefined ? "" : `; when it last answered: ${summary(last)}`
        return yield* new AlarmsNotQuiet({
          deliveries,
          message: `not quiet after ${deliveries} deliveries (out of time, the Object did not answer obligations)${previous}`,
          ...(last === undefined ? {} : { obligations: last }),
        })
      }
      const owed = read.value
      last = owed
      if (isQuiet(owed)) return { deliveries, failedDeliveries, obligations: owed }
      const now = Date.now()
      const give = (why: string) =>
        Effect.fail(
          new AlarmsNotQuiet({
            deliveries,
            message: `not quiet after ${deliveries} deliveries (${why}): ${summary(owed)}`,
            obligations: owed,
          }),
        )
      if (deliveries >= maxDeliveries) return yield* give(`at most ${maxDeliveries}`)
      if (now >= deadline) return yield* give("out of time")
      if (owed.passRunning) {
        yield* sleep(QUIET_POLL_MILLIS)
        continue
      }
      // Not before the Object's own alarm either, when it set one later: that is when workerd
      // runs it. Owed work that cannot move yet (a mutation in flight keeps its generation
      // owed) would otherwise run pass after pass that each leave it owed.
      const owedAt = Math.min(...owed.obligations.map((obligation) => obligation.dueAt))
      const due = owed.scheduledAlarm !== null && owed.scheduledAlarm > owedAt ? owed.scheduledAlarm : owedAt
      if (due > now) {
        if (due > deadline)
          return yield* give(
            due === owedAt ? `next due in ${due - now} ms` : `the Object's alarm is set in ${due - now} ms`,
          )
        yield* sleep(due - now)
        continue
      }
      // A delivery whose pass never ends (a handler that holds) must not outlast the bound.
      const ran = yield* Effect.race(
        Effect.tryPromise(options.runAlarm).pipe(
          Effect.map((ran) => (ran ? "ran" : "empty")),
          Effect.orElseSucceed(() => "failed" as const),
        ),
        Effect.as(sleep(deadline - now), "stuck" as const),
      )
      if (ran === "stuck") return yield* give("out of time, a delivery still running")
      if (ran === "empty") {
        // The pool took the alarm: its pass runs, or just ended. Look again shortly.
        yield* sleep(QUIET_POLL_MILLIS)
        continue
      }
      deliveries++
      if (ran === "failed") failedDeliveries++
    }
  })
