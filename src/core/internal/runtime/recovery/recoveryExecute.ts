/**
 * Recovery execution: classify every nonterminal Submission and execute its decision now or
 * leave it to a claiming Attempt. Recovery writes are fenced by the row's epoch and the absence
 * of a live lease; a row that changed since it was read is reported `deferred` and looked at
 * again by the next pass.
 */
import { withSpanFast } from "../../spanned.ts"
import { Clock, Context, Effect, Option, Stream } from "effect"
import { type RecoveryDecision, RecoveryReport } from "../shared/model.ts"
import type { SubmissionSnapshot } from "../../ledger/model.ts"
import {
  classifyRecovery,
  dispositionOf,
  type RecoveryFacts,
  recoveryNeedsHistory,
} from "./recoveryClassify.ts"
import { revertJoin, settleJoined } from "../children/joins.ts"
import { unownedFence } from "../../ledger/rules.ts"
import { loadJournal, type RuntimeEnv, vanished } from "../shared/runtimeEnv.ts"
import { EMPTY_JOURNAL, type Journal } from "../shared/journal.ts"
import { finishReserved, makeSettlement, settle, settleAborted } from "../settlement/settle.ts"
import { materialize } from "../admission/admitRow.ts"

const OPERATION = "DurableAgentRuntime.runRecovery"

/**
 * Which Submissions `runRecovery` classifies. `every-nonterminal` (the default) reports one
 * decision per nonterminal Submission. `candidates` looks only at the rows recovery can have
 * to act on (`scanRecoveryCandidates`: an accepted abort, a row an older release left
 * mid-admission or mid-settlement, a join its host's settlement may have left). The others are decided by their state: queued or resumed
 * input is the claiming Attempt's (`ApplyInput`, `ResumeFromTurnBoundary`); a running row is
 * its owner's, or, when its Claim is expired or of an earlier incarnation, the next Attempt's,
 * which takes the Claim over and replays the journal; a wait nothing resolved stays parked (a
 * resolution resumes the row in its own transaction). A pass reads no queue and no wait.
 */
export const RecoveryWorklist = Context.Reference<"every-nonterminal" | "candidates">(
  "@effect-agent/platform-cloudflare/DurableAgentRuntime/RecoveryWorklist",
  { defaultValue: () => "every-nonterminal" },
)

/** What the decision of a join needs beyond its row: its host, when it still exists. @internal */
export const joinFacts = (env: RuntimeEnv, row: SubmissionSnapshot) =>
  Effect.gen(function* () {
    if ((row.state !== "joining" && row.state !== "joined") || row.host === undefined) return {}
    const host = yield* env.ledger.lookup(row.host)
    if (Option.isNone(host)) return {}
    const readsThis =
      row.state === "joined" || (yield* loadJournal(env, row.host)).joined.has(row.submissionId)
    return {
      host: {
        state: host.value.state,
        readsThis,
        ...(host.value.settlement === undefined ? {} : { settlement: host.value.settlement }),
      },
    } satisfies RecoveryFacts
  })

/** Appends the Unknown Outcome record of the open uncertain step, unless it is there. */
const recordUnknown = (
  env: RuntimeEnv,
  row: SubmissionSnapshot,
  journal: Journal,
  fence: ReturnType<typeof unownedFence>,
  now: number,
) => {
  const open = journal.openUncertain
  return open === undefined || open.recorded
    ? Effect.void
    : env.history.append(
        row.submissionId,
        { _tag: "UnknownOutcomeRecorded", step: open.step, name: open.name },
        fence,
        now,
      )
}

/** Executes one decision; `false` when there was nothing to execute. */
const execute = (
  env: RuntimeEnv,
  row: SubmissionSnapshot,
  decision: RecoveryDecision,
  journal: Journal,
  facts: RecoveryFacts,
  now: number,
) =>
  Effect.gen(function* () {
    const fence = unownedFence(row, now, env.incarnation)
    switch (decision._tag) {
      case "CompleteMaterialization":
      case "RepairReadiness":
        return yield* materialize(env, row, { accepted: journal.accepted })
      case "ReleaseExpiredLease":
        yield* env.ledger.transition(fence, "ready")
        return
      case "MarkUnknown":
        yield* recordUnknown(env, row, journal, fence, now)
        if (row.state === "running") yield* env.ledger.transition(fence, "unknown")
        return
      case "AwaitReconcileRetry":
        // The next try is a timed wait: an alarm at its time runs it, no pass polls for it.
        yield* recordUnknown(env, row, journal, fence, now)
        yield* env.ledger.parkTimed(fence, {
          wait: { _tag: "Reconcile", step: decision.step, dueAt: decision.notBefore, since: now },
          dueAt: decision.notBefore,
          now,
        })
        return
      case "ReconcileUnknown":
        // The evidence first, then the next Attempt replays to the step and runs its reconcile.
        yield* recordUnknown(env, row, journal, fence, now)
        yield* env.ledger.transition(fence, "ready")
        yield* env.wake.notify(row.threadId)
        return
      case "AppendReservedSettlement":
      case "FinalizeLedgerFromHistory":
        yield* finishReserved(env, row, decision._tag === "FinalizeLedgerFromHistory")
        return
      case "SettleAborted": {
        const recorded = yield* loadJournal(env, row.submissionId)
        yield* settleAborted(env, fence, row, recorded.abortRecorded)
        return
      }
      case "ApplyUnknownResolutions":
      case "ResumeSuspended":
      case "ResumeWaitingParent":
        yield* env.ledger.transition(fence, "ready")
        yield* env.wake.notify(row.threadId)
        return
      case "RevertJoining":
        return yield* revertJoin(env, row)
      case "RepairJoinMarker":
        yield* env.ledger.markJoined(row.submissionId)
        return
      case "SettleJoinedWithHost": {
        const host = facts.host?.settlement
        if (host !== undefined) return yield* settleJoined(env, row, host)
        // The host is gone (only a damaged ledger loses a row): settle rather than wait forever.
        return yield* settle(
          env,
          fence,
          row,
          yield* makeSettlement(row, { outcome: "failed", error: `its host ${row.host} is gone` }),
        )
      }
      case "ApplyInput":
      case "ResumeFromTurnBoundary":
      case "AwaitUnknownResolution":
      case "AwaitApprovalDecision":
      case "AwaitChildSettlement":
      case "AwaitEvent":
      case "AwaitHostSettlement":
      case "AwaitDue":
      case "Due":
      case "NoAction":
        return
    }
  })

const report = (
  row: SubmissionSnapshot,
  decision: RecoveryDecision,
  disposition: RecoveryReport["disposition"],
) => new RecoveryReport({ submissionId: row.submissionId, threadId: row.threadId, decision, disposition })

/** Classifies and recovers one row under the runtime's lock. */
const recoverOne = (env: RuntimeEnv, scanned: SubmissionSnapshot) =>
  env.exclusive(
    Effect.gen(function* () {
      // The scan may be stale by the time the lock is held: decide on the current row.
      const current = yield* env.ledger.lookup(scanned.submissionId)
      if (Option.isNone(current) || current.value.state === "settled") {
        return report(scanned, { _tag: "NoAction" }, "none")
      }
      const row = current.value
      const now = yield* Clock.currentTimeMillis
      const journal = recoveryNeedsHistory(row, now, env.incarnation)
        ? yield* loadJournal(env, row.submissionId)
        : EMPTY_JOURNAL
      const facts: RecoveryFacts = { ...(yield* joinFacts(env, row)), incarnation: env.incarnation }
      const decision = classifyRecovery(row, now, journal, facts)
      return yield* execute(env, row, decision, journal, facts, now).pipe(
        Effect.as(report(row, decision, dispositionOf(decision))),
        // Another writer moved the row first (a claim, a racing resolution): nothing is lost,
        // the next pass classifies it again.
        Effect.catchTags({
          FenceRejected: () => Effect.succeed(report(row, decision, "deferred")),
          OwnershipLost: () => Effect.succeed(report(row, decision, "deferred")),
          InvalidTransition: () => Effect.succeed(report(row, decision, "deferred")),
          SubmissionNotFound: (missing) => Effect.fail(vanished(OPERATION)(missing)),
        }),
      )
    }),
  )

/** `runRecovery`. @internal */
export const makeRunRecovery = (env: RuntimeEnv) =>
  Effect.gen(function* () {
    const worklist = yield* RecoveryWorklist
    const rows = yield* Stream.runCollect(
      worklist === "candidates" ? env.ledger.scanRecoveryCandidates : env.ledger.scanNonterminal,
    )
    return yield* Effect.forEach(rows, (row) => recoverOne(env, row))
  }).pipe(withSpanFast("DurableAgentRuntime.runRecovery"))
