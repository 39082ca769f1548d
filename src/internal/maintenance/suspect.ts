/**
 * The dead-letter rule of the lane heads: a head whose Attempts keep killing the Object (a step
 * over the isolate's memory or CPU limit) takes its turn's writes with it, so nothing of it
 * commits and every later event would serve it again. Each Attempt of a careful event (one that
 * began without a durable lane cursor, as every event after a death does) is noted durably before
 * it runs, in the commit that event makes before each Attempt anyway: the note names the
 * Submission in flight and counts, per Submission, the earlier events that died with an Attempt
 * of it in flight. A careful event that finds a note naming a Submission in flight counts a death
 * for it (and logs it); an Attempt that returns clears its own count, in an ordinary event too
 * (the incarnation remembers which Submissions its note counts, so an ordinary event reads and
 * writes the note only after an Attempt of one of them). Once a head's count
 * reaches `maxObjectKillsPerHead` (`"never"` by default), its next Attempt settles it `failed`
 * with `setAsideReason(count)` without running its program, so its lane moves on and the
 * Submission settles once, its parent (if it is a child) told as for any failure. A host killed
 * or reset while the head's Attempt runs counts the same: nothing tells the two apart, which is
 * why the rule is the application's choice.
 *
 * Ordinary events write no note: an Attempt that kills the Object in one is counted from the
 * careful event after it, which serves it again with a note. They write only to end the count of
 * a head whose Attempt returned. Without a cap nothing is noted.
 */
import { Effect, Option, Schema } from "effect"
import type { HeadAttemptOptions } from "../../core/DurableAgentRuntime.ts"
import { SubmissionId } from "../../core/Identifiers.ts"
import type { LedgerError, SubmissionLedger, SubmissionSnapshot } from "../../core/SubmissionLedger.ts"
import type { DurableAlarmError } from "./errors.ts"
import type { MaintenanceEnv, SuspectMemory } from "./maintenanceEnv.ts"

/** @internal The Durable Object KV key of the note. */
export const SUSPECT_HEAD_KEY = "effect-agent:suspect-head:v1"

/** The counts a note keeps at most (the latest). */
const MAX_SUSPECTS = 8

/** The `error` of a head set aside after its Attempts killed the Object `kills` times. */
export const setAsideReason = (kills: number): string =>
  `set aside: its Attempt killed its Object ${kills} times (out of memory or CPU before its turn ended); it was not run again`

class SuspectDeaths extends Schema.Class<SuspectDeaths>("@effect-agent/platform-cloudflare/SuspectDeaths")({
  submissionId: SubmissionId,
  deaths: Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)),
}) {}

class SuspectNote extends Schema.Class<SuspectNote>("@effect-agent/platform-cloudflare/SuspectHead")({
  /** The Submission whose Attempt was in flight when the note was written. */
  inFlight: Schema.optionalKey(SubmissionId),
  /** Earlier events that died with an Attempt of each Submission in flight. */
  suspects: Schema.Array(SuspectDeaths),
}) {}

const decodeNote = Schema.decodeUnknownOption(SuspectNote)
const encodeNote = Schema.encodeSync(SuspectNote)

/** A damaged note counts nothing (it only ever sets work aside). */
const readNote = (raw: unknown): SuspectNote =>
  raw === undefined
    ? new SuspectNote({ suspects: [] })
    : Option.getOrElse(decodeNote(raw), () => new SuspectNote({ suspects: [] }))

/**
 * @internal The events counted as dead with an Attempt of `submissionId` in flight, in a row,
 * by a stored note (`raw`); 0 without one.
 */
export const objectKillsOf = (raw: unknown, submissionId: string): number =>
  readNote(raw).suspects.find((entry) => entry.submissionId === submissionId)?.deaths ?? 0

/** @internal */
export const makeSuspectMemory = (): SuspectMemory => ({ counted: new Set() })

const countedBy = (suspects: ReadonlyArray<SuspectDeaths>): ReadonlySet<SubmissionId> =>
  new Set(suspects.map((entry) => entry.submissionId))

/** @internal The notes of one event. */
export interface SuspectNotes {
  /**
   * Notes an Attempt of `head` in flight (the caller commits it before the Attempt), counting a
   * death for the Submission a stored note names in flight. Answers the Attempt's `setAside`
   * when `head` reached the cap.
   */
  readonly note: (
    head: SubmissionSnapshot,
  ) => Effect.Effect<HeadAttemptOptions["setAside"], DurableAlarmError | LedgerError>
  /**
   * An ordinary event's Attempt of `head`, which writes no note: if the note counts `head`, its
   * return ends that count (`clear` writes it).
   */
  readonly watch: (head: SubmissionSnapshot) => Effect.Effect<void>
  /** The noted (or watched) Attempt returned (however it ended): it killed nothing. */
  readonly returned: Effect.Effect<void>
  /** Whether a returned Attempt's note is still stored (`clear` removes it). */
  readonly pending: () => boolean
  /** Writes what returned since the last note: the Attempt is no longer in flight. */
  readonly clear: Effect.Effect<void, DurableAlarmError>
  /**
   * For a careful event that noted no Attempt: counts the death a stored note names in flight
   * and drops the counts of settled Submissions, so a note whose heads settled otherwise (an
   * abort, recovery) is removed rather than left behind.
   */
  readonly tidy: Effect.Effect<void, DurableAlarmError | LedgerError>
  /** Whether notes are kept: only with `maxObjectKillsPerHead` set. */
  readonly enabled: boolean
}

/**
 * Without a cap nothing is noted: every incarnation's first event would otherwise write (and
 * clear) a row and end a turn more, a cost sporadic traffic pays per Submission, for a count
 * nothing acts on.
 */
const disabled: SuspectNotes = {
  note: () => Effect.undefined,
  watch: () => Effect.void,
  returned: Effect.void,
  pending: () => false,
  clear: Effect.void,
  tidy: Effect.void,
  enabled: false,
}

/** @internal */
export const makeSuspectNotes = (env: MaintenanceEnv, ledger: SubmissionLedger["Service"]): SuspectNotes => {
  if (env.config.maxObjectKillsPerHead === "never") return disabled
  const memory = env.suspectMemory
  /** The Submission this event noted in flight, until its note is written over or cleared. */
  let noted: SubmissionId | undefined
  let returned = false
  let pruned = false
  /** Whether this event noted an Attempt. */
  let touched = false

  /** The stored note without the Attempt this event noted and saw return. */
  const settle = (stored: SuspectNote): SuspectNote => {
    if (noted === undefined || !returned) return stored
    const own = noted
    return new SuspectNote({ suspects: stored.suspects.filter((entry) => entry.submissionId !== own) })
  }

  /** Drops the counts of Submissions that are no longer nonterminal (once per event). */
  const prune = (suspects: ReadonlyArray<SuspectDeaths>) =>
    Effect.filter(suspects, (entry) =>
      Effect.map(
        ledger.lookup(entry.submissionId),
        (row) => Option.isSome(row) && row.value.state !== "settled",
      ),
    )

  /** The stored counts, with a death for the Attempt a note of another event names in flight. */
  const counted = (stored: SuspectNote) =>
    Effect.gen(function* () {
      let suspects = settle(stored).suspects
      // A note naming another event's Attempt in flight: that event died with it.
      const died = noted === undefined ? stored.inFlight : undefined
      if (died !== undefined) {
        const previous = suspects.find((entry) => entry.submissionId === died)?.deaths ?? 0
        suspects = [
          ...suspects.filter((entry) => entry.submissionId !== died),
          new SuspectDeaths({ submissionId: died, deaths: previous + 1 }),
        ]
        yield* Effect.logWarning("an event died with a head Attempt in flight").pipe(
          Effect.annotateLogs({ submissionId: died, deaths: previous + 1 }),
        )
      }
      if (!pruned && suspects.length > 0) {
        pruned = true
        suspects = yield* prune(suspects)
      }
      return suspects
    })

  const readStored = env.transactRecord("read suspect head", (txn) => readNote(txn.get(SUSPECT_HEAD_KEY)))

  const note = (head: SubmissionSnapshot) =>
    Effect.gen(function* () {
      touched = true
      const suspects = yield* counted(yield* readStored)
      const next = new SuspectNote({ inFlight: head.submissionId, suspects: suspects.slice(-MAX_SUSPECTS) })
      yield* env.transactRecord("note suspect head", (txn) => txn.put(SUSPECT_HEAD_KEY, encodeNote(next)))
      memory.counted = countedBy(next.suspects)
      noted = head.submissionId
      returned = false
      const deaths = suspects.find((entry) => entry.submissionId === head.submissionId)?.deaths ?? 0
      const cap = env.config.maxObjectKillsPerHead
      if (cap === "never" || deaths < cap) return undefined
      yield* Effect.logError("a head that keeps killing its Object is set aside as failed").pipe(
        Effect.annotateLogs({ submissionId: head.submissionId, threadId: head.threadId, deaths }),
      )
      return { submissionId: head.submissionId, error: setAsideReason(deaths) }
    })

  const clear = Effect.suspend(() => {
    if (noted === undefined || !returned) return Effect.void
    return env
      .transactRecord("clear suspect head", (txn) => {
        const { suspects } = settle(readNote(txn.get(SUSPECT_HEAD_KEY)))
        if (suspects.length === 0) txn.delete(SUSPECT_HEAD_KEY)
        else txn.put(SUSPECT_HEAD_KEY, encodeNote(new SuspectNote({ suspects })))
        return suspects
      })
      .pipe(
        Effect.tap((suspects) =>
          Effect.sync(() => {
            memory.counted = countedBy(suspects)
            noted = undefined
            returned = false
          }),
        ),
      )
  })

  const tidy = Effect.suspend(() => {
    if (touched) return Effect.void
    touched = true
    return Effect.gen(function* () {
      const raw = yield* env.transactRecord("read suspect head", (txn) => txn.get(SUSPECT_HEAD_KEY))
      if (raw === undefined) return
      const suspects = yield* counted(readNote(raw))
      yield* env.transactRecord("tidy suspect head", (txn) => {
        if (suspects.length === 0) txn.delete(SUSPECT_HEAD_KEY)
        else txn.put(SUSPECT_HEAD_KEY, encodeNote(new SuspectNote({ suspects })))
      })
      memory.counted = countedBy(suspects)
    })
  })

  return {
    note,
    tidy,
    watch: (head) =>
      Effect.sync(() => {
        if (!memory.counted.has(head.submissionId)) return
        noted = head.submissionId
        returned = false
      }),
    returned: Effect.sync(() => {
      returned = noted !== undefined
    }),
    pending: () => noted !== undefined && returned,
    clear,
    enabled: true,
  }
}
