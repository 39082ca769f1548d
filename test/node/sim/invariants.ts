/**
 * The invariants of maintenance, checked on every storage commit, failpoint hit and handler
 * end, and on the whole durable state after every driver step. Each evaluated predicate counts
 * as one check, under the name of its invariant; a failed one records a violation (the run
 * fails at the end of its step, with the trace).
 *
 * - prearm-floor: a pass never writes an alarm earlier than the one it wrote when it began, so
 *   workerd never cancels its own handler.
 * - record: generations only grow, `processed` never passes `dirty`, and only a gated mutation
 *   advances `dirty`, by one.
 * - ack-pass-start: a pass acknowledges only the generation it read when it began.
 * - retry-monotone: a committed retry never moves earlier.
 * - retry-not-early: no native work runs for a generation before its retry is due.
 * - heads-per-event: at most `maxHeadsPerEvent` head Attempts per alarm event (1,000 by default, 1 with `BETA96_PACING`),
 *   each of another Submission.
 * - binding-lane: a lane whose head waits for a compatible binding is not served before the
 *   wait is due (and other lanes are not held back by it: due-alarm).
 * - quiescence: a successful pass that leaves only stable waits, with nothing owed (nothing
 *   settled for retention to remove either), clears the alarm.
 * - owed-alarm: owed maintenance always has an alarm (or a running pass).
 * - due-alarm: autonomous work has an alarm no later than its bounded backoff.
 * - settlement-immutable, settled-once, fifo, journal-once, uncertain-once: a Submission
 *   settles once and for good, lanes start in order, a step is journaled once and an uncertain
 *   effect runs at most once.
 * - timer-covered: every timed wait has an alarm by the time it can be served plus the
 *   coalescing window (or by the ordinary pacing once it is due, or by a pending retry).
 * - timer-not-early: the due path claims a row only at or after its due time, and a fired timer
 *   is journaled no earlier than its due time.
 * - timer-once: a sleep fires once (one `TimerFired` per call), and each failed attempt of a
 *   retried step is journaled once.
 * - retry-monotone (journal): a retried step's attempts count up from 1 and their due times
 *   never move earlier.
 * - retention-*: see `retention.ts`; delayed-*, occurrence-*, end-occurrences: see `schedules.ts`.
 */
import { Schema } from "effect"
import type { ThreadMaintenanceFailpointLocation } from "../../../src/Alarm.ts"
import type { RuntimeFailpointLocation } from "../../../src/core/RuntimeFailpoint.ts"
import type { MemoryStore } from "../../../src/core/internal/ledger/memoryStore.ts"
import type { SubmissionId } from "../../../src/core/Identifiers.ts"
import { MAINTENANCE_STATE_KEY, ThreadMaintenanceState } from "../../../src/internal/maintenance/state.ts"
import { hasPendingMessages, lanes, timedWaits } from "./oracle.ts"
import { makeScheduleChecks } from "./schedules.ts"
import {
  type AlarmRun,
  currentOrigin,
  type Holder,
  type Origin,
  type SimStorage,
  type StorageEvent,
} from "./storagePort.ts"
import type { Claim, Fence, SubmissionSnapshot } from "../../../src/core/SubmissionLedger.ts"

/** How a handler run ended. */
export type RunOutcome = "success" | "failure" | "evicted" | "wall-limit" | "cancelled"

/** What the monitor reads of the world. */
export interface WorldView {
  readonly now: () => number
  readonly storage: SimStorage
  readonly store: MemoryStore
  readonly rpcInFlight: () => number
  /** The platform dropped a failing alarm and no constructor has run since. */
  readonly platformGaveUp: () => boolean
  /** Retention removes settled Submissions in this run: a quiet Object keeps its alarm for it. */
  readonly retains: boolean
  readonly timing: {
    readonly floorMillis: number
    readonly capMillis: number
    readonly wakeScanIntervalMillis: number
    readonly maxHeadsPerEvent: number
    readonly coalesceMillis: number
  }
}

const decodeRecord = Schema.decodeUnknownSync(ThreadMaintenanceState)
const decoded = new WeakMap<object, ThreadMaintenanceState>()
/** Decodes a stored record once: committed values are replaced, never mutated. */
const decode = (raw: unknown): ThreadMaintenanceState => {
  if (typeof raw !== "object" || raw === null) return decodeRecord(raw)
  let record = decoded.get(raw)
  if (record === undefined) {
    record = decodeRecord(raw)
    decoded.set(raw, record)
  }
  return record
}
const bootstrap = { dirty: 1n, processed: 0n, lastServedThreadId: undefined } as const

/** The maintenance record in storage, if any. */
export const readRecord = (storage: SimStorage): ThreadMaintenanceState | undefined => {
  const raw = storage.kv.get(MAINTENANCE_STATE_KEY)
  return raw === undefined ? undefined : decode(raw)
}

interface RunState {
  /** The record the pass read in its first transaction (`beginPass`). */
  start?: {
    readonly dirty: bigint
    readonly processed: bigint
    readonly retry?: ThreadMaintenanceState["retry"]
    readonly nextDueAt?: number
  }
  beginAt?: number
  /** The alarm right after the begin transaction: the pass's crash-fallback prearm. */
  prearm?: number | null
  claims: number
  /** The Submissions the pass claimed. */
  readonly claimed: Set<string>
  /** When the pass last chose a lane, and the binding waits then in storage. */
  selectAt?: number
  waits?: ThreadMaintenanceState["bindingRetries"]
}

/** Checks the invariants; `violations` lists every failure seen. */
export const makeMonitor = (view: WorldView) => {
  let checks = 0
  const byKind: Record<string, number> = {}
  const violations: Array<string> = []
  /** Evaluates one invariant predicate of `kind`. */
  const check = (kind: string, ok: boolean, message: () => string) => {
    checks++
    byKind[kind] = (byKind[kind] ?? 0) + 1
    if (!ok) violations.push(message())
  }
  /** Submissions retention removed (see `removedSafely`). */
  const removed = new Set<SubmissionId>()
  const schedules = makeScheduleChecks(view.store, check, removed)
  const runs = new Map<number, RunState>()
  /** Runs whose handler ended: a zombie's pass may go on, but it can commit nothing any more. */
  const ended = new Set<number>()
  const runOf = (origin: Origin | undefined) => {
    if (origin?.kind !== "alarm" || ended.has(origin.run)) return undefined
    let state = runs.get(origin.run)
    if (state === undefined) {
      state = { claims: 0, claimed: new Set() }
      runs.set(origin.run, state)
    }
    return state
  }
  const retryFloor = new Map<bigint, number>()
  const settled = new Map<SubmissionId, string>()
  const seenRows = new Map<SubmissionId, object>()
  const journaled = new Set<string>()
  /** Events recorded (by `submissionId:eventId`, with their name) and taken. */
  const received = new Map<string, string>()
  const consumed = new Set<string>()
  /** Event waits that timed out, by `submissionId:step`. */
  const timedOut = new Set<string>()
  const historySettled = new Set<SubmissionId>()
  const external = new Map<string, number>()
  let feedSeen = 0

  const storageEvent = (event: StorageEvent) => {
    const run = runOf(event.origin)
    if (run !== undefined && run.start === undefined && event.reads.has(MAINTENANCE_STATE_KEY)) {
      const raw = event.reads.get(MAINTENANCE_STATE_KEY)
      run.start = raw === undefined ? bootstrap : decode(raw)
      run.beginAt = event.at
      if (event.committed) run.prearm = view.storage.visibleAlarm()
    }
    const written = event.alarm?.after
    if (run !== undefined && event.committed && written !== undefined && written !== null) {
      // No self-cancellation: the pass never writes an alarm earlier than its begin-time prearm.
      const prearm = run.prearm
      check(
        "prearm-floor",
        prearm === undefined || prearm === null || written >= prearm,
        () => `alarm run ${JSON.stringify(event.origin)} wrote ${written}, earlier than its prearm ${prearm}`,
      )
    }
    if (!event.committed || !event.writes.has(MAINTENANCE_STATE_KEY)) return
    const beforeRaw = event.before.get(MAINTENANCE_STATE_KEY)
    const before = beforeRaw === undefined ? bootstrap : decode(beforeRaw)
    const after = decode(event.writes.get(MAINTENANCE_STATE_KEY))
    const who = JSON.stringify(event.origin ?? null)
    check(
      "record",
      after.processed >= before.processed,
      () => `processed decreased ${before.processed} -> ${after.processed} by ${who}`,
    )
    check(
      "record",
      after.dirty >= before.dirty,
      () => `dirty decreased ${before.dirty} -> ${after.dirty} by ${who}`,
    )
    check(
      "record",
      after.processed <= after.dirty,
      () => `processed ${after.processed} beyond dirty ${after.dirty} by ${who}`,
    )
    if (after.dirty !== before.dirty) {
      // Client calls and routed requests prearm; so does a pass's delivery driver when it records
      // a reply that changes native work.
      check(
        "record",
        event.origin !== undefined &&
          event.origin.kind !== "constructor" &&
          after.dirty === before.dirty + 1n,
        () => `dirty advanced ${before.dirty} -> ${after.dirty} outside a single prearm (${who})`,
      )
    }
    if (after.processed !== before.processed) {
      // Exact acknowledgement: only the generation read at pass start is ever acknowledged.
      const start = run?.start
      const expected =
        start === undefined ? undefined : start.dirty > before.processed ? start.dirty : before.processed
      check(
        "ack-pass-start",
        expected !== undefined && after.processed === expected,
        () =>
          `processed set to ${after.processed} by ${who}, but the pass started at generation ${start?.dirty ?? "?"} (dirty now ${after.dirty})`,
      )
    }
    const retry = after.retry
    if (retry !== undefined) {
      // Retry monotonicity: a committed retry never moves earlier, whether its generation is still owed to
      // native work or only to host work after it was processed.
      const floor = retryFloor.get(retry.generation)
      check(
        "retry-monotone",
        floor === undefined || retry.notBefore >= floor,
        () =>
          `retry of generation ${retry.generation} moved earlier: ${floor} -> ${retry.notBefore} by ${who}`,
      )
      retryFloor.set(retry.generation, Math.max(floor ?? retry.notBefore, retry.notBefore))
    }
  }

  const maintenanceHit = (origin: Origin | undefined, location: ThreadMaintenanceFailpointLocation) => {
    const run = runOf(origin)
    if (run === undefined) return
    if (location === "maintenance:select:after") {
      // The waits the selection had to honour (checked at the claim).
      run.waits = readRecord(view.storage)?.bindingRetries
      return
    }
    if (location !== "maintenance:select:before") return
    run.selectAt = view.now()
    const start = run.start
    // Retry monotonicity: early deliveries never run native work before the retry is due.
    const retry =
      start?.retry !== undefined && start.retry.generation === start.dirty ? start.retry : undefined
    // Native work is owed by a dirty generation, or by a timed wait due by the record's bound.
    const owed =
      start !== undefined &&
      (start.dirty > start.processed || (start.nextDueAt ?? Infinity) <= (run.beginAt ?? -Infinity))
    check(
      "retry-not-early",
      owed && (retry === undefined || retry.notBefore <= (run.beginAt ?? -Infinity)),
      () =>
        `native work ran at ${run.beginAt} for a record ${JSON.stringify(start, (_k, v) => (typeof v === "bigint" ? String(v) : v))}`,
    )
  }

  const runtimeHit = (origin: Origin | undefined, location: RuntimeFailpointLocation) => {
    const run = runOf(origin)
    if (run === undefined || location !== "ledger:claim:before") return
    run.claims++
    check(
      "heads-per-event",
      run.claims <= view.timing.maxHeadsPerEvent,
      () => `alarm run ${origin?.kind === "alarm" ? origin.run : "?"} claimed ${run.claims} heads`,
    )
  }

  /** Binding waits per Submission: a lane whose head waits is not served before the wait is due. */
  const servedLane = (claim: Claim) => {
    const run = runOf(currentOrigin())
    if (run === undefined) return
    check(
      "heads-per-event",
      !run.claimed.has(claim.submissionId),
      () => `alarm run claimed ${claim.submissionId} twice in one event`,
    )
    run.claimed.add(claim.submissionId)
    const wait = run.waits?.find(
      (entry) => entry.threadId === claim.threadId && entry.submissionId === claim.submissionId,
    )
    const at = run.selectAt ?? view.now()
    check(
      "binding-lane",
      wait === undefined || wait.notBefore <= at,
      () => `lane ${claim.threadId} served at ${at} while its binding wait runs until ${wait?.notBefore}`,
    )
  }

  /** The simulated incarnation behind each runtime incarnation id, learnt from its Claims. */
  const claimants = new Map<string, Holder>()
  let takeovers = 0
  /**
   * A Claim is taken from a live lease only by another incarnation, and only once the owner's
   * incarnation is dead: within one incarnation the lease protects a running Attempt, and a
   * dead one's Attempt, however long it goes on, is fenced out by the epoch the takeover moved.
   */
  const claimed = (holder: Holder, before: SubmissionSnapshot | undefined, claim: Claim, now: number) => {
    servedLane(claim)
    schedules.claimed(claim.submissionId, now)
    if (claim.dueAt !== undefined && before?.state === "waiting") {
      check(
        "timer-not-early",
        before.dueAt !== undefined && before.dueAt <= now,
        () => `${claim.submissionId} claimed by the due path at ${now}, due at ${before.dueAt}`,
      )
    }
    const incarnation = claim.incarnation
    check(
      "takeover",
      incarnation !== undefined && (claimants.get(incarnation) ?? holder) === holder,
      () => `incarnation ${holder.id} claimed ${claim.submissionId} as ${incarnation}`,
    )
    if (incarnation !== undefined) claimants.set(incarnation, holder)
    const owner = before?.ownership
    if (before?.state !== "running" || owner === undefined || owner.leaseExpiresAt <= now) return
    const ownerHolder = owner.incarnation === undefined ? undefined : claimants.get(owner.incarnation)
    takeovers++
    check(
      "takeover",
      owner.incarnation !== incarnation && ownerHolder !== undefined && !ownerHolder.alive(),
      () =>
        `incarnation ${holder.id} took ${claim.submissionId} from a live lease of incarnation ${ownerHolder?.id ?? "?"} (alive ${ownerHolder?.alive()})`,
    )
  }

  /**
   * The epoch fence: a write of a reset incarnation that got through was authorized by the
   * epoch the Submission had then. Once the next incarnation took the Claim over (a new
   * epoch), nothing of the old one lands.
   */
  const zombieWrote = (holder: Holder, fence: Fence, epochBefore: number | undefined) => {
    const epoch = fence._tag === "Owner" ? fence.claim.producerEpoch : fence.producerEpoch
    check(
      "epoch-fence",
      epochBefore === epoch,
      () =>
        `reset incarnation ${holder.id} wrote with epoch ${epoch} to ${fence._tag === "Owner" ? fence.claim.submissionId : fence.submissionId} at epoch ${epochBefore}`,
    )
  }

  let selfCancellations = 0
  /** A handler cancelled by an earlier alarm: by its own pass only after its prearm (checked above). */
  const cancelled = (run: AlarmRun, origin: Origin | undefined) => {
    if (origin?.kind === "alarm" && origin.run === run.id) selfCancellations++
  }

  const performed = (key: string, uncertain: boolean) => {
    const count = (external.get(key) ?? 0) + 1
    external.set(key, count)
    if (uncertain) check("uncertain-once", count <= 1, () => `uncertain effect ${key} ran ${count} times`)
  }

  const runEnded = (run: AlarmRun, outcome: RunOutcome) => {
    runs.delete(run.id)
    ended.add(run.id)
    if (outcome !== "success") return
    // Quiescence: a successful pass that leaves only stable waits, nothing owed and no schedule,
    // clears the alarm.
    const record = readRecord(view.storage)
    const quiet =
      record !== undefined &&
      record.dirty === record.processed &&
      view.rpcInFlight() === 0 &&
      !hasPendingMessages(view.store) &&
      !lanes(view.store).some((lane) => lane.autonomous) &&
      timedWaits(view.store).length === 0 &&
      view.store.schedules.size === 0 &&
      // A removed schedule (or an aborted delayed head) may leave a due bound: the record keeps
      // its alarm until a pass at or after it (and after a pending retry) finds nothing, by
      // design; `end-quiescent` checks that it goes.
      record.nextDueAt === undefined &&
      !(view.retains && view.store.pruneAfter.size > 0)
    if (quiet) {
      check(
        "quiescence",
        view.storage.alarm === null,
        () => `quiescent after run ${run.id} but the alarm is ${view.storage.alarm}`,
      )
    }
  }

  /** The durable state between two driver steps. */
  const step = () => {
    const { storage, store, timing } = view
    const now = view.now()
    const record = readRecord(storage)
    const running = storage.run !== undefined
    if (!running && !view.platformGaveUp()) {
      // Liveness: owed maintenance has an alarm.
      // A record is created by the first constructor; before it nothing is owed.
      const owed = record !== undefined && record.dirty > record.processed
      check(
        "owed-alarm",
        !owed || storage.alarm !== null,
        () => `generation ${record?.dirty}/${record?.processed} owed with no alarm`,
      )
      // A message still to send keeps an alarm: the delivery driver's deadline.
      check(
        "delivery-alarm",
        !hasPendingMessages(store) || storage.alarm !== null,
        () => `messages are left to send with no alarm`,
      )
      // Pending autonomous work has an alarm no later than its due time: the bounded backoff,
      // or later only for a lane whose head waits for compatible code (a binding wait never
      // delays another lane, and never shortens the backoff either).
      const backoff = now + Math.max(timing.capMillis, timing.wakeScanIntervalMillis) + timing.floorMillis
      let due = Infinity
      for (const lane of lanes(store)) {
        if (!lane.autonomous) continue
        const wait = record?.bindingRetries?.find((entry) => entry.submissionId === lane.head.submissionId)
        due = Math.min(due, Math.max(wait?.notBefore ?? 0, backoff))
      }
      if (due !== Infinity) {
        const bound =
          storage.platformRetryAt === storage.alarm && storage.alarm !== null
            ? Math.max(due, storage.alarm)
            : due
        check(
          "due-alarm",
          storage.alarm !== null && storage.alarm <= bound,
          () =>
            `autonomous work due by ${bound} but the alarm is ${storage.alarm} (now ${now}): ${lanes(store)
              .filter((lane) => lane.autonomous)
              .map((lane) =>
                lane.rows
                  .map(
                    (row) =>
                      `${row.threadId}#${row.queueSequence} ${row.agentId} ${row.state}${row.abortRequested ? " abort" : ""}`,
                  )
                  .join(", "),
              )
              .join("; ")}`,
        )
      }
    }
    if (!running && !view.platformGaveUp()) checkTimers(now, record)
    checkLedger()
    schedules.step()
  }

  /** Every timed wait has its alarm: by its time plus the window, or the pacing once it is due. */
  const checkTimers = (now: number, record: ThreadMaintenanceState | undefined) => {
    const { storage, store, timing } = view
    const pacing = now + Math.max(timing.capMillis, timing.wakeScanIntervalMillis) + timing.floorMillis
    const retry =
      record?.retry !== undefined && record.retry.generation === record.dirty
        ? record.retry.notBefore
        : -Infinity
    for (const row of timedWaits(store)) {
      const owner = row.ownership
      const holder = owner?.incarnation === undefined ? undefined : claimants.get(owner.incarnation)
      // A live owner holds it until its lease ends; a dead one's Claim is taken over at once.
      const held =
        owner !== undefined && row.state === "running" && holder?.alive() === true
          ? owner.leaseExpiresAt
          : -Infinity
      const binding =
        record?.bindingRetries?.find((wait) => wait.submissionId === row.submissionId)?.notBefore ?? -Infinity
      const servable = Math.max(row.dueAt ?? -Infinity, held, binding)
      let bound = Math.max(servable + timing.coalesceMillis, pacing, retry)
      if (storage.platformRetryAt === storage.alarm && storage.alarm !== null)
        bound = Math.max(bound, storage.alarm)
      check(
        "timer-covered",
        storage.alarm !== null && storage.alarm <= bound,
        () =>
          `${row.submissionId} (${row.state}) can be served at ${servable}, but the alarm is ${storage.alarm} (now ${now}, bound ${bound})`,
      )
    }
  }

  /** The failed attempts seen per Submission and step: their count and last due time. */
  const retries = new Map<string, { readonly attempts: number; readonly retryAt: number }>()

  const checkLedger = () => {
    const { store } = view
    for (const row of store.rows.values()) {
      // Rows are replaced on every write: an unchanged object was checked already.
      if (seenRows.get(row.submissionId) === row) continue
      seenRows.set(row.submissionId, row)
      if (row.state === "settled" && row.parent !== undefined) {
        // A child settles with its marker for the parent: the outbox owes it from that write on.
        const marker = store.outbox.get(`settled:${row.submissionId}`)?.message
        check(
          "child-marker-durable",
          marker?._tag === "ChildSettled" && marker.outcome === row.settlement?.outcome,
          () => `child ${row.submissionId} settled without its settlement marker in the outbox`,
        )
      }
      if (row.state !== "settled") {
        check(
          "settlement-immutable",
          !settled.has(row.submissionId),
          () => `settled submission ${row.submissionId} is ${row.state} again`,
        )
        continue
      }
      const settlement = JSON.stringify(row.settlement)
      const first = settled.get(row.submissionId)
      check(
        "settlement-immutable",
        first === undefined || first === settlement,
        () => `settlement of ${row.submissionId} changed: ${first} -> ${settlement}`,
      )
      settled.set(row.submissionId, settlement)
    }
    for (; feedSeen < store.historyFeed.length; feedSeen++) {
      const record = store.historyFeed[feedSeen]
      if (record === undefined) continue
      const { entry, submissionId } = record
      switch (entry._tag) {
        case "SubmissionSettled":
          check(
            "settled-once",
            !historySettled.has(submissionId),
            () => `submission ${submissionId} settled twice in history`,
          )
          historySettled.add(submissionId)
          break
        case "InputApplied": {
          // FIFO: a Submission starts only after every earlier one of its lane settled.
          const row = store.rows.get(submissionId)
          const earlier = [...store.rows.values()].filter(
            (other) => other.threadId === row?.threadId && other.queueSequence < (row?.queueSequence ?? 0),
          )
          check(
            "fifo",
            earlier.every((other) => historySettled.has(other.submissionId)),
            () => `submission ${submissionId} started before an earlier one of lane ${row?.threadId} settled`,
          )
          break
        }
        case "EventWaitTimedOut": {
          // Final: the wait that timed out never takes an event, and times out once.
          const key = `${submissionId}:${entry.step}`
          check(
            "event-once",
            !timedOut.has(key) && !journaled.has(`${submissionId}:EventConsumed:${entry.step}`),
            () => `the wait at ${submissionId} step ${entry.step} timed out twice or after taking an event`,
          )
          timedOut.add(key)
          break
        }
        case "EventReceived": {
          const key = `${submissionId}:${entry.eventId}`
          check("event-once", !received.has(key), () => `event ${key} recorded twice`)
          received.set(key, entry.event)
          break
        }
        case "EventConsumed": {
          // Taken once, by a wait for its own name, after it arrived.
          const key = `${submissionId}:${entry.eventId}`
          check(
            "event-once",
            received.get(key) === entry.event && !consumed.has(key),
            () =>
              `event ${key} taken at step ${entry.step} ${consumed.has(key) ? "again" : `as "${entry.event}" but received as "${received.get(key)}"`}`,
          )
          consumed.add(key)
          check(
            "event-once",
            !timedOut.has(`${submissionId}:${entry.step}`),
            () => `the wait at ${submissionId} step ${entry.step} took ${entry.eventId} after it timed out`,
          )
          const journal = `${submissionId}:EventConsumed:${entry.step}`
          check(
            "journal-once",
            !journaled.has(journal),
            () => `a second event taken at ${submissionId} step ${entry.step}`,
          )
          journaled.add(journal)
          break
        }
        case "TimerFired": {
          check(
            "timer-not-early",
            record.recordedAt >= entry.dueAt,
            () =>
              `the sleep at ${submissionId} step ${entry.step} fired at ${record.recordedAt}, due ${entry.dueAt}`,
          )
          const key = `${submissionId}:TimerFired:${entry.step}`
          check(
            "timer-once",
            !journaled.has(key),
            () => `the sleep at ${submissionId} step ${entry.step} fired twice`,
          )
          journaled.add(key)
          break
        }
        case "StepAttemptFailed": {
          const key = `${submissionId}:${entry.step}`
          const before = retries.get(key)
          check(
            "retry-monotone",
            entry.attempt === (before?.attempts ?? 0) + 1 && entry.retryAt >= (before?.retryAt ?? -Infinity),
            () =>
              `attempt ${entry.attempt} of ${submissionId} step ${entry.step} failed with retryAt ${entry.retryAt} after ${JSON.stringify(before)}`,
          )
          retries.set(key, { attempts: entry.attempt, retryAt: entry.retryAt })
          break
        }
        case "StepCompleted":
        case "StepFailed":
        case "UncertainStepStarted":
        case "ApprovalRequested":
        case "ChildStarted":
        case "ChildAwaited":
        case "ChildSettled":
        case "InputJoined": {
          const kind = entry._tag === "StepFailed" ? "StepCompleted" : entry._tag
          const key = `${submissionId}:${kind}:${entry.step}`
          check(
            "journal-once",
            !journaled.has(key),
            () => `${entry._tag} journaled twice at ${submissionId} step ${entry.step}`,
          )
          journaled.add(key)
          break
        }
        default:
          break
      }
    }
  }

  return {
    storageEvent,
    maintenanceHit,
    runtimeHit,
    cancelled,
    claimed,
    zombieWrote,
    performed,
    runEnded,
    step,
    check,
    get checks() {
      return checks
    },
    /** Checks executed per invariant. */
    byKind,
    get selfCancellations() {
      return selfCancellations
    },
    /** Claims taken from a live lease (of a dead incarnation). */
    get takeovers() {
      return takeovers
    },
    violations,
    removed,
    /** The checks of delayed Submissions and schedules (`schedules.ts`). */
    schedules,
  }
}

/** The monitor of one run. */
export type Monitor = ReturnType<typeof makeMonitor>
