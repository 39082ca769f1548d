/**
 * Recovery execution: classify every nonterminal Submission and execute its decision now or
 * leave it to a claiming Attempt. Recovery writes are fenced by the row's epoch and the absence
 * of a live lease; a row that changed since it was read is reported `deferred` and looked at
 * again by the next pass.
 */
import { Clock, Context, Effect, Option, Stream } from "effect"
import { type RecoveryDecision, RecoveryReport } from "./model.ts"
import type { SubmissionSnapshot } from "../ledger/model.ts"
import {
  classifyRecovery,
  dispositionOf,
  type RecoveryFacts,
  recoveryNeedsHistory,
} from "./recoveryClassify.ts"
import { messageIds } from "../outbox/model.ts"
import { settlementMarker } from "./children.ts"
import { revertJoin, settleJoined } from "./joins.ts"
import { unownedFence } from "../ledger/rules.ts"
import { loadJournal, type RuntimeEnv, vanished } from "./env.ts"
import { emptyJournal, type Journal } from "./journal.ts"
import { finishReserved, makeSettlement, settle, settleAborted } from "./settle.ts"
import { materialize } from "./admission.ts"

const operation = "DurableAgentRuntime.runRecovery"

/**
 * Which Submissions `runRecovery` classifies. `every-nonterminal` (the default) reports one
 * decision per nonterminal Submission. `candidates` skips plain queued input (a `ready` row
 * never claimed and without an accepted abort): its decision is always `ApplyInput`, deferred
 * to the claiming Attempt, so a caller that classifies such rows by state (the maintenance
 * pass) gets the same decisions without reading a long queue.
 */
export const RecoveryWorklist = Context.Reference<"every-nonterminal" | "candidates">(
  "@effect-agent/durable-agent-runtime/RecoveryWorklist",
  { defaultValue: () => "every-nonterminal" },
)

/** What the decision of `row` needs beyond its journal: its marker, or its host. */
const recoveryFacts = (env: RuntimeEnv, row: SubmissionSnapshot, journal: Journal) =>
  Effect.gen(function* () {
    if (row.state === "terminalizing" && row.parent !== undefined && journal.settled) {
      const marker = yield* env.outbox.lookup(messageIds.childSettled(row.submissionId))
      return {
        marker: Option.isNone(marker)
          ? "missing"
          : marker.value.acknowledgedAt === undefined
            ? "pending"
            : "acknowledged",
      } satisfies RecoveryFacts
    }
    if ((row.state === "joining" || row.state === "joined") && row.host !== undefined) {
      const host = yield* env.ledger.lookup(row.host)
      if (Option.isNone(host)) return {} satisfies RecoveryFacts
      const readsThis =
        row.state === "joined" || (yield* loadJournal(env, row.host)).joined.has(row.submissionId)
      return {
        host: {
          state: host.value.state,
          readsThis,
          ...(host.value.settlement === undefined ? {} : { settlement: host.value.settlement }),
        },
      } satisfies RecoveryFacts
    }
    return {} satisfies RecoveryFacts
  })

/** Executes one decision. */
const execute = (
  env: RuntimeEnv,
  row: SubmissionSnapshot,
  decision: RecoveryDecision,
  journal: Journal,
  facts: RecoveryFacts,
  now: number,
) =>
  Effect.gen(function* () {
    const fence = unownedFence(row, now)
    switch (decision._tag) {
      case "CompleteMaterialization":
      case "CompleteChildAdmission":
      case "RepairReadiness":
        return yield* materialize(env, row, { accepted: journal.accepted })
      case "ReleaseExpiredLease":
        yield* env.ledger.transition(fence, "ready")
        return
      case "MarkUnknown": {
        const open = journal.openUncertain
        if (open !== undefined && !open.recorded) {
          yield* env.history.append(
            row.submissionId,
            { _tag: "UnknownOutcomeRecorded", step: open.step, name: open.name },
            fence,
            now,
          )
        }
        if (row.state === "running") yield* env.ledger.transition(fence, "unknown")
        return
      }
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
      case "AwaitSettlementDelivery": {
        // The marker is enqueued with the settlement record; re-enqueueing is a no-op then.
        const settlement = row.settlement
        if (facts.marker === "missing" && settlement !== undefined)
          yield* env.outbox.enqueue(settlementMarker(row, settlement), now)
        return
      }
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
          yield* makeSettlement(row, { outcome: "failed", error: `its host ${row.host} is gone` }),
        )
      }
      case "ApplyInput":
      case "ResumeFromTurnBoundary":
      case "AwaitUnknownResolution":
      case "AwaitApprovalDecision":
      case "AwaitChildSettlement":
      case "AwaitHostSettlement":
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
      const journal = recoveryNeedsHistory(row, now)
        ? yield* loadJournal(env, row.submissionId)
        : emptyJournal
      const facts = yield* recoveryFacts(env, row, journal)
      const decision = classifyRecovery(row, now, journal, facts)
      return yield* execute(env, row, decision, journal, facts, now).pipe(
        Effect.as(report(row, decision, dispositionOf(decision))),
        // Another writer moved the row first (a claim, a racing resolution): nothing is lost,
        // the next pass classifies it again.
        Effect.catchTags({
          FenceRejected: () => Effect.succeed(report(row, decision, "deferred")),
          OwnershipLost: () => Effect.succeed(report(row, decision, "deferred")),
          InvalidTransition: () => Effect.succeed(report(row, decision, "deferred")),
          SubmissionNotFound: (missing) => Effect.fail(vanished(operation)(missing)),
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
  }).pipe(Effect.withSpan("DurableAgentRuntime.runRecovery"))
