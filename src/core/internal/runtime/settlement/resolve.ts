/**
 * External actions on one Submission: abort, approval and Unknown Outcome resolutions, admin
 * retry, and waiting for the settlement. Each checks and writes under the runtime's lock, so
 * two resolutions of the same wait cannot both pass the check.
 */
import { spanned, spannedScoped } from "../../spanned.ts"
import { Clock, Effect, Option } from "effect"
import {
  type ApprovalDecision,
  NotPending,
  SettlementTimeout,
  type UnknownResolution,
} from "../shared/model.ts"
import type { SubmissionId } from "../../../Identifiers.ts"
import { InvalidTransition, SubmissionNotFound, type SubmissionSnapshot } from "../../ledger/model.ts"
import { unownedFence } from "../../ledger/rules.ts"
import { loadJournal, type RuntimeEnv } from "../shared/runtimeEnv.ts"
import { makeSettlement, settle } from "./settle.ts"

const rowOf = (env: RuntimeEnv, submissionId: SubmissionId) =>
  Effect.flatMap(env.ledger.lookup(submissionId), (row) =>
    Option.isSome(row)
      ? Effect.succeed(row.value)
      : Effect.fail(
          new SubmissionNotFound({ submissionId, message: `no submission ${submissionId} in this ledger` }),
        ),
  )

const notPending = (row: SubmissionSnapshot, expected: NotPending["expected"], message: string) =>
  new NotPending({ submissionId: row.submissionId, expected, message })

/** A state change that lost a race with another writer: the wait is no longer pending. */
const lostRace =
  (row: SubmissionSnapshot, expected: NotPending["expected"]) =>
  <A, E, R>(
    effect: Effect.Effect<A, E, R>,
  ): Effect.Effect<A, Exclude<E, InvalidTransition> | NotPending, R> =>
    Effect.mapError(effect, (error: E) => {
      const refused: unknown = error
      return refused instanceof InvalidTransition
        ? notPending(row, expected, `submission ${row.submissionId} changed while it was being resolved`)
        : (error as Exclude<E, InvalidTransition>)
    })

/** @internal */
export const makeResolutions = (env: RuntimeEnv) => ({
  abort: spanned("DurableAgentRuntime.abort")(function* (submissionId: SubmissionId) {
    const row = yield* env.exclusive(
      Effect.gen(function* () {
        const row = yield* rowOf(env, submissionId)
        if (row.state === "settled" || row.state === "terminalizing") return row
        const marked = yield* env.ledger.requestAbort(submissionId)
        yield* env.hit("abort:after-intent")
        return marked
      }),
    )
    yield* env.wake.notify(row.threadId)
  }),

  resolveApproval: spanned("DurableAgentRuntime.resolveApproval")(function* (
    submissionId: SubmissionId,
    decision: ApprovalDecision,
    options?: { readonly step?: number },
  ) {
    const row = yield* env.exclusive(
      Effect.gen(function* () {
        const row = yield* rowOf(env, submissionId)
        // An accepted abort ends the wait: a later decision would race the aborted settlement. A
        // request with a timeout waits `waiting` until its due Attempt closes it.
        const parked = row.state === "suspended" || (row.state === "waiting" && row.wait?._tag === "Approval")
        const step =
          parked && !row.abortRequested ? (yield* loadJournal(env, submissionId)).openApproval : undefined
        if (step === undefined) {
          return yield* notPending(
            row,
            "approval",
            `submission ${submissionId} is ${row.abortRequested ? "being aborted" : row.state}, not awaiting an approval`,
          )
        }
        if (options?.step !== undefined && options.step !== step) {
          return yield* notPending(
            row,
            "approval",
            `submission ${submissionId} awaits the approval request at call ${step}, not at call ${options.step}`,
          )
        }
        const now = yield* Clock.currentTimeMillis
        const resolved = {
          _tag: "ApprovalResolved",
          step,
          approved: decision.approved,
          ...(decision.note === undefined ? {} : { note: decision.note }),
        } as const
        const fence = unownedFence(row, now, env.incarnation)
        // The decision is recorded in the transaction that acts on it: an approval resumes the
        // row, a denial settles it. Nothing is left half-resolved for recovery to find.
        if (decision.approved) {
          const resumed = yield* env.ledger
            .transition(fence, "ready", { entries: [resolved], now })
            .pipe(lostRace(row, "approval"))
          yield* env.hit("resolve:after-intent")
          return resumed
        }
        const settlement = yield* makeSettlement(row, {
          outcome: "failed",
          error: decision.note === undefined ? "approval denied" : `approval denied: ${decision.note}`,
        })
        const settled = yield* settle(env, fence, row, settlement, [resolved]).pipe(lostRace(row, "approval"))
        yield* env.hit("resolve:after-intent")
        return settled
      }),
    )
    // An approval leaves work for an Attempt; a denial lets the lane's next Submission run.
    yield* env.wake.notify(row.threadId)
  }),

  resolveUnknown: spanned("DurableAgentRuntime.resolveUnknown")(function* (
    submissionId: SubmissionId,
    resolution: UnknownResolution,
    options?: { readonly step?: number },
  ) {
    const row = yield* env.exclusive(
      Effect.gen(function* () {
        const row = yield* rowOf(env, submissionId)
        // A waiting row may wait for a reconcile's next try: a person may decide before it.
        const open =
          (row.state === "unknown" || row.state === "waiting") && !row.abortRequested
            ? (yield* loadJournal(env, submissionId)).openUncertain
            : undefined
        if (open === undefined) {
          return yield* notPending(
            row,
            "unknown-outcome",
            `submission ${submissionId} is ${row.abortRequested ? "being aborted" : row.state}, not awaiting an Unknown Outcome resolution`,
          )
        }
        if (options?.step !== undefined && options.step !== open.step) {
          return yield* notPending(
            row,
            "unknown-outcome",
            `submission ${submissionId} awaits the resolution of the uncertain step at call ${open.step}, not at call ${options.step}`,
          )
        }
        const now = yield* Clock.currentTimeMillis
        const resumed = yield* env.ledger
          .transition(unownedFence(row, now, env.incarnation), "ready", {
            entries: [{ _tag: "UnknownOutcomeResolved", step: open.step, resolution }],
            now,
          })
          .pipe(lostRace(row, "unknown-outcome"))
        yield* env.hit("resolve:after-intent")
        return resumed
      }),
    )
    yield* env.wake.notify(row.threadId)
  }),

  retry: spanned("DurableAgentRuntime.retry")(function* (submissionId: SubmissionId) {
    const row = yield* env.exclusive(
      Effect.gen(function* () {
        const row = yield* rowOf(env, submissionId)
        if (row.state !== "running") {
          return yield* notPending(
            row,
            "retryable",
            `submission ${submissionId} is ${row.state}, not running`,
          )
        }
        const now = yield* Clock.currentTimeMillis
        // Revocation ends the lease now: the fence treats it as expired, and the epoch advance
        // fences out the revoked owner's later writes.
        const revokeAt = Math.max(now, row.ownership?.leaseExpiresAt ?? now)
        return yield* env.ledger
          .transition(unownedFence(row, revokeAt, env.incarnation), "ready")
          .pipe(lostRace(row, "retryable"))
      }),
    )
    yield* env.wake.notify(row.threadId)
  }),

  awaitSettlement: spannedScoped("DurableAgentRuntime.awaitSettlement")(function* (
    submissionId: SubmissionId,
    options?: { readonly timeoutMillis?: number },
  ) {
    const start = yield* Clock.currentTimeMillis
    const timeout = options?.timeoutMillis
    // Woken by a write of this incarnation that may settle the Submission (not by its Claim or
    // its journal records); the poll finds a write of another one.
    const progress = yield* env.progress.watch(submissionId, { settlementOnly: true })
    while (true) {
      const row = yield* rowOf(env, submissionId)
      if (row.state === "settled" && row.settlement !== undefined) return row.settlement
      const elapsed = (yield* Clock.currentTimeMillis) - start
      if (timeout !== undefined && elapsed >= timeout) {
        return yield* new SettlementTimeout({
          submissionId,
          message: `submission ${submissionId} did not settle within ${timeout} ms (it is ${row.state})`,
        })
      }
      const poll = env.settings.settlementPollInterval
      yield* progress.next(timeout === undefined ? poll : Math.min(poll, timeout - elapsed))
    }
  }),
})
