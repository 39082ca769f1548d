/**
 * One bounded Attempt at a lane head: claim it, resolve its binding, apply its input, run the
 * program with its context, and end the Attempt by settling, parking or releasing. Ownership
 * ends however the Attempt stops: an interrupted or failed Attempt releases its Claim, so the
 * row is left `ready` rather than held by a lease nobody renews.
 */
import { spanned } from "../../spanned.ts"
import { Cause, Clock, DateTime, Effect, Exit, Fiber, Option, Schema } from "effect"
import type { AnyAgentDefinition } from "../../../AgentRegistration.ts"
import { AttemptId, OwnershipToken, type SubmissionId, type ThreadId } from "../../../Identifiers.ts"
import type { RuntimeFailpointLocation } from "../../../RuntimeFailpoint.ts"
import {
  type HeadAttempt,
  type HeadAttemptOptions,
  RunJournalError,
  type SettlementConflict,
} from "../shared/model.ts"
import {
  type Claim,
  type ClaimGrant,
  InvalidTransition,
  LedgerError,
  type Settlement,
  SubmissionNotFound,
  type SubmissionSnapshot,
} from "../../ledger/model.ts"
import {
  type AttemptState,
  type AttemptStop,
  owedAtPark,
  storableMessage,
  unstorable,
  ownerFence,
  takeStaged,
} from "./attemptState.ts"
import { makeAgentContext } from "./agentContext.ts"
import { loadJournal, type RuntimeEnv, vanished } from "../shared/runtimeEnv.ts"
import { EMPTY_JOURNAL, type Journal } from "../shared/journal.ts"
import { asConflict, makeSettlement, type Settling, settle, settleAborted } from "../settlement/settle.ts"
import { finishJoinsOf } from "../children/joins.ts"

const OPERATION = "DurableAgentRuntime.processThreadHead"

/** Marks the end of the Attempt's ownership once it settled. */
const ended = (attempt: AttemptState) => () => {
  attempt.ended = true
}

/** Maps the ledger's refusals of a write this Attempt was entitled to make. */
const entitled = <A, E>(
  effect: Effect.Effect<A, E>,
): Effect.Effect<A, Exclude<E, InvalidTransition | SubmissionNotFound> | SettlementConflict | LedgerError> =>
  Effect.mapError(effect, (error: E) => {
    const refused: unknown = error
    if (refused instanceof InvalidTransition) return asConflict(refused)
    if (refused instanceof SubmissionNotFound) return vanished(OPERATION)(refused)
    return error as Exclude<E, InvalidTransition | SubmissionNotFound>
  })

/**
 * Settles the program's ending, unless an abort was accepted since the Attempt last looked (while
 * its last call ran, or after it): an accepted abort settles `aborted`, as `abort` promises. The
 * look and the settlement hold the runtime's lock, so an abort is either seen or refused as
 * settled. The row is usually known since the last boundary: the look reads nothing then.
 */
const finish = (
  attempt: AttemptState,
  row: Settling,
  journal: Journal,
  ending: Parameters<typeof makeSettlement>[1],
) =>
  attempt.env.exclusive(
    Effect.gen(function* () {
      const current = yield* attempt.env.ledger.lookup(attempt.claim.submissionId)
      if (Option.isSome(current) && current.value.abortRequested)
        return yield* abortOwned(attempt, row, journal)
      const settlement = yield* makeSettlement(
        attempt.claim,
        ending.outcome === "failed"
          ? { outcome: "failed", error: storableMessage(attempt, ending.error) }
          : ending,
      )
      return settled(
        yield* entitled(
          settle(attempt.env, ownerFence(attempt), row, settlement, takeStaged(attempt, []), ended(attempt)),
        ),
      )
    }),
  )

const settled = (settlement: Settlement): HeadAttempt => ({ _tag: "Settled", settlement })

const abortOwned = (attempt: AttemptState, row: Settling, journal: Journal) =>
  Effect.map(
    entitled(
      settleAborted(
        attempt.env,
        ownerFence(attempt),
        row,
        journal.abortRecorded,
        takeStaged(attempt, []),
        ended(attempt),
      ),
    ),
    settled,
  )

/** Ends the Attempt for the reason the program was stopped. */
const endStopped = (attempt: AttemptState, row: Settling, journal: Journal, stop: AttemptStop) =>
  Effect.gen(function* () {
    const { ledger, wake } = attempt.env
    switch (stop._tag) {
      case "Yield":
        yield* entitled(ledger.release(attempt.claim))
        attempt.ended = true
        return { _tag: "Yielded", journaled: attempt.recorded } satisfies HeadAttempt
      case "Wait": {
        const now = yield* Clock.currentTimeMillis
        const { park } = stop
        const entries = [...owedAtPark(attempt), ...park.entries]
        const parked = yield* entitled(
          ledger.parkTimed(ownerFence(attempt), {
            wait: park.wait,
            dueAt: park.dueAt,
            now,
            ...(entries.length === 0 ? {} : { entries }),
            ...(park.awaiting === undefined ? {} : { awaiting: park.awaiting }),
          }),
        )
        attempt.ended = true
        if (park.after !== undefined) yield* attempt.env.hit(park.after)
        // What it waits for arrived before the park: the row is due at once.
        if (parked.dueAt !== undefined && parked.dueAt <= now) yield* wake.notify(attempt.claim.threadId)
        return { _tag: "Parked", wait: "waiting" } satisfies HeadAttempt
      }
      case "Suspend":
      case "Unknown": {
        const wait = stop._tag === "Suspend" ? "suspended" : "unknown"
        const owed = owedAtPark(attempt)
        if (owed.length > 0) {
          yield* entitled(
            attempt.env.history.appendAll(
              attempt.claim.submissionId,
              owed,
              ownerFence(attempt),
              yield* Clock.currentTimeMillis,
            ),
          )
        }
        const left = yield* entitled(
          ledger.park(
            attempt.claim,
            wait,
            stop._tag === "Suspend" ? stop.awaiting : undefined,
            stop._tag === "Suspend" ? stop.wait : undefined,
          ),
        )
        attempt.ended = true
        // What it waits for arrived before the park: the row is ready to run on, its wait journaled.
        if (left === "ready") {
          yield* wake.notify(attempt.claim.threadId)
          return { _tag: "Yielded", journaled: true } satisfies HeadAttempt
        }
        return { _tag: "Parked", wait } satisfies HeadAttempt
      }
      case "Abort":
        return yield* abortOwned(attempt, row, journal)
      case "Denied":
        return yield* finish(attempt, row, journal, {
          outcome: "failed",
          error: stop.note === undefined ? "approval denied" : `approval denied: ${stop.note}`,
        })
      case "Failure":
        return yield* stop.error
    }
  })

/** Runs the program and settles by its exit, unless a context call stopped it. */
const runProgram = (
  attempt: AttemptState,
  agent: AnyAgentDefinition,
  journal: Journal,
  row: SubmissionSnapshot,
) =>
  Effect.gen(function* () {
    const decoded = yield* Effect.result(
      Effect.flatMap(
        Effect.try({ try: () => JSON.parse(row.inputPayload) as unknown, catch: (cause) => String(cause) }),
        (json) => Effect.mapError(Schema.decodeUnknownEffect(agent.input)(json), (error) => error.message),
      ),
    )
    // Admission decoded it with the agent's Schema: code with the same digest that cannot (a
    // check or a transformation the digest does not see) waits for compatible code.
    if (decoded._tag === "Failure") {
      return yield* new RunJournalError({
        submissionId: row.submissionId,
        message: `the stored input does not decode: ${decoded.failure}`,
      })
    }
    // In a fiber of its own: an interruption of the Attempt interrupts the wait for it, so an
    // interrupted exit here is the program's own doing, a stop a call asked for, or a cut.
    const exit = yield* Fiber.await(
      yield* Effect.forkChild(
        agent.program(decoded.success, makeAgentContext(attempt, journal, agent, row.wait)),
        { startImmediately: true },
      ),
    )
    if (attempt.stop !== undefined) return yield* endStopped(attempt, row, journal, attempt.stop)
    if (Exit.isSuccess(exit)) {
      const output = yield* Effect.result(Schema.encodeUnknownEffect(agent.output)(exit.value))
      if (output._tag === "Failure") {
        return yield* finish(attempt, row, journal, {
          outcome: "failed",
          error: `the output does not encode: ${output.failure.message}`,
        })
      }
      const refusal = unstorable(attempt, "the output", output.success)
      return yield* refusal === undefined
        ? finish(attempt, row, journal, { outcome: "completed", output: output.success })
        : finish(attempt, row, journal, { outcome: "failed", error: refusal })
    }
    const failure = Cause.findErrorOption(exit.cause)
    if (failure._tag === "Some")
      return yield* finish(attempt, row, journal, { outcome: "failed", error: failure.value.message })
    if (Cause.hasInterruptsOnly(exit.cause)) {
      // Cut like a dead process: leave the work for a later Attempt.
      if (attempt.cut === true) return yield* Effect.failCause(exit.cause as Cause.Cause<never>)
      // The program interrupted itself: every later Attempt would again, so it settles.
      return yield* finish(attempt, row, journal, {
        outcome: "failed",
        error: "the program interrupted itself",
      })
    }
    return yield* finish(attempt, row, journal, {
      outcome: "failed",
      error: `the program died: ${Cause.pretty(exit.cause)}`,
    })
  })

/** How an Attempt takes its Claim: by its lane, or in place by the due path. */
interface ClaimRoute {
  readonly claim: (grant: ClaimGrant) => Effect.Effect<Option.Option<Claim>, LedgerError>
  readonly before: RuntimeFailpointLocation
  readonly after: RuntimeFailpointLocation
  /** The semantic point once the Claim is held, before anything is read. */
  readonly held: RuntimeFailpointLocation
}

/** The body of an Attempt that holds `claim`. */
const runAttempt = (attempt: AttemptState, route: ClaimRoute, options: HeadAttemptOptions) =>
  Effect.gen(function* () {
    const { env, claim } = attempt
    yield* env.hit(route.after)
    yield* env.hit(route.held)
    const found = yield* env.ledger.lookup(claim.submissionId)
    if (Option.isNone(found)) {
      return yield* new LedgerError({
        operation: OPERATION,
        message: `submission ${claim.submissionId} vanished`,
      })
    }
    const row = found.value
    // Before its first Claim a Submission's only records are its acceptance and, with an
    // accepted abort, the abort: a first Attempt without an abort has nothing to replay.
    let journal =
      row.producerEpoch === 1 && !row.abortRequested
        ? EMPTY_JOURNAL
        : yield* loadJournal(env, claim.submissionId)
    // An accepted abort needs no binding: aborting work whose code is gone still settles it.
    if (row.abortRequested) return yield* withJoins(attempt, abortOwned(attempt, row, journal))
    // A head set aside settles failed without its program (nor its binding) running again.
    const { setAside } = options
    if (setAside !== undefined && setAside.submissionId === claim.submissionId)
      return yield* withJoins(
        attempt,
        finish(attempt, row, journal, { outcome: "failed", error: setAside.error }),
      )
    const agent = yield* env.registry.resolve(row.agentId, row.agentDigest)
    // Applying the input is recorded with the Attempt's first record (see `AttemptState.staged`).
    if (!journal.inputApplied) {
      attempt.staged = [{ _tag: "InputApplied" }]
      journal = { ...journal, inputApplied: true }
    }
    const settled = runProgram(attempt, agent, journal, row)
    // Only an agent that takes joined input can have joins to finish.
    return yield* agent.acceptsJoinedInput ? withJoins(attempt, settled) : settled
  })

/** Once the Attempt settled its Submission, its joins settle with it or run on their own. */
const withJoins = <E, R>(attempt: AttemptState, settling: Effect.Effect<HeadAttempt, E, R>) =>
  Effect.tap(settling, (ended) =>
    ended._tag === "Settled" ? finishJoinsOf(attempt.env, attempt.claim, ended.settlement) : Effect.void,
  )

/** One Attempt over a Claim taken by `route`; a Claim it still holds at its end is released. */
const attemptHead = (env: RuntimeEnv, route: ClaimRoute, options: HeadAttemptOptions) =>
  Effect.acquireUseRelease(
    Effect.gen(function* () {
      yield* env.hit(route.before)
      const now = yield* Clock.currentTimeMillis
      const claimed = yield* route.claim({
        attemptId: AttemptId.make(crypto.randomUUID()),
        ownershipToken: OwnershipToken.make(crypto.randomUUID()),
        now,
        leaseDurationMillis: env.settings.ownershipLeaseDuration,
        incarnation: env.incarnation,
      })
      return Option.map(claimed, (claim): AttemptState => ({
        env,
        claim,
        lastRenewal: now,
        liveSteps: 0,
        yieldAfter: DateTime.toEpochMillis(options.yieldAfter),
        stop: undefined,
        ended: false,
        recorded: false,
        staged: [],
      }))
    }),
    (attempt) =>
      Option.isNone(attempt)
        ? Effect.as(env.hit(route.after), {
            _tag: "Unclaimed",
          } satisfies HeadAttempt as HeadAttempt)
        : runAttempt(attempt.value, route, options),
    // Whatever stopped the Attempt, a Claim it still holds goes back to the lane.
    (attempt) =>
      Option.isNone(attempt) || attempt.value.ended
        ? Effect.void
        : Effect.ignore(env.ledger.release(attempt.value.claim)),
  )

/**
 * A lane head the claim refused because its `notBefore` is still ahead (admitted behind others,
 * it became the head early) parks until then, so its lane is skipped and the due bound wakes the
 * Object for it instead of the pass looking again. Read only when nothing was claimed; a row
 * that moved meanwhile is left to the next pass.
 */
const deferDelayedHead = (env: RuntimeEnv, threadId: ThreadId, now: number) =>
  Effect.gen(function* () {
    const head = Option.getOrUndefined(yield* env.ledger.head(threadId))
    if (head === undefined || head.state !== "ready" || head.dueAt === undefined || head.dueAt <= now) return
    yield* env.ledger
      .deferHead({ _tag: "Unowned", submissionId: head.submissionId, producerEpoch: head.producerEpoch, now })
      .pipe(
        Effect.catchTags({
          FenceRejected: () => Effect.void,
          OwnershipLost: () => Effect.void,
          SubmissionNotFound: () => Effect.void,
          InvalidTransition: () => Effect.void,
        }),
      )
  })

/** `attemptThreadHead`. @internal */
export const makeAttemptThreadHead = (env: RuntimeEnv) =>
  spanned("DurableAgentRuntime.attemptThreadHead")(function* (
    threadId: ThreadId,
    options: HeadAttemptOptions,
  ) {
    const attempt = yield* attemptHead(
      env,
      {
        claim: (grant) => env.claimUnhooked(threadId, grant),
        before: "ledger:claim:before",
        after: "ledger:claim:after",
        held: "claim:after-claim",
      },
      options,
    )
    if (attempt._tag === "Unclaimed") yield* deferDelayedHead(env, threadId, yield* Clock.currentTimeMillis)
    return attempt
  })

/** `attemptDueHead`. @internal */
export const makeAttemptDueHead = (env: RuntimeEnv) =>
  spanned("DurableAgentRuntime.attemptDueHead")(function* (
    submissionId: SubmissionId,
    options: HeadAttemptOptions,
  ) {
    return yield* attemptHead(
      env,
      {
        claim: (grant) => env.claimDueUnhooked(submissionId, grant),
        before: "ledger:claim-due:before",
        after: "ledger:claim-due:after",
        held: "timer:after-fire",
      },
      options,
    )
  })

/** `processThreadHead`: the settlement of the head Attempt, if it settled. @internal */
export const makeProcessThreadHead = (attemptThreadHead: ReturnType<typeof makeAttemptThreadHead>) =>
  spanned("DurableAgentRuntime.processThreadHead")(function* (
    threadId: ThreadId,
    options: { readonly yieldAfter: DateTime.Utc },
  ) {
    const attempt = yield* attemptThreadHead(threadId, options)
    return attempt._tag === "Settled" ? Option.some(attempt.settlement) : Option.none<Settlement>()
  })
