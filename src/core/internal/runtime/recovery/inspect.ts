/**
 * Read-only views of recovery for operators: what recovery would decide for a Submission now
 * and the canonical evidence behind it (the open approval request, the open uncertain step and
 * its reconcile), executing nothing. The decision comes from the same pure classification the
 * pass runs, over the same ledger row and journal.
 */
import { spanned, withSpanFast } from "../../spanned.ts"
import { Clock, Effect, Option, Schema, Stream } from "effect"
import { ReconcileAnswerRecord } from "../../history/model.ts"
import { type SubmissionSnapshot, SubmissionSnapshot as Snapshot } from "../../ledger/model.ts"
import type { SubmissionId } from "../../../Identifiers.ts"
import { loadJournal, type RuntimeEnv } from "../shared/runtimeEnv.ts"
import { EMPTY_JOURNAL, readJournal, reconcileStatus } from "../shared/journal.ts"
import { RecoveryDecision, RecoveryReport } from "../shared/model.ts"
import { classifyRecovery, dispositionOf, recoveryNeedsHistory } from "./recoveryClassify.ts"
import { joinFacts } from "./recoveryExecute.ts"

/** An approval request without a decision. */
export class OpenApproval extends Schema.Class<OpenApproval>(
  "@effect-agent/platform-cloudflare/DurableAgentRuntime/OpenApproval",
)({
  step: Schema.Int,
  payload: Schema.Json,
  /** When it was requested (epoch ms). */
  since: Schema.Finite,
}) {}

/** Where the reconcile of an open uncertain step stands. */
export class ReconcileState extends Schema.Class<ReconcileState>(
  "@effect-agent/platform-cloudflare/DurableAgentRuntime/ReconcileState",
)({
  /** `none`: the step has no reconcile; `due`: the next Attempt runs one; `backoff`: a failed one waits until `notBefore`; `exhausted`: a person decides. */
  status: Schema.Literals(["none", "due", "backoff", "exhausted"]),
  /** Reconciles the step allows, and how many started. */
  allowed: Schema.Int,
  started: Schema.Int,
  notBefore: Schema.optionalKey(Schema.Finite),
  lastAnswer: Schema.optionalKey(ReconcileAnswerRecord),
}) {}

/** An uncertain step that started and whose outcome is not known. */
export class OpenUncertainStep extends Schema.Class<OpenUncertainStep>(
  "@effect-agent/platform-cloudflare/DurableAgentRuntime/OpenUncertainStep",
)({
  step: Schema.Int,
  name: Schema.String,
  /** When its outcome became unknown (or, before that is recorded, when it started). */
  since: Schema.Finite,
  reconcile: ReconcileState,
}) {}

/** The backoff of a retried step: its failed attempts so far and when the next one runs. */
export class OpenRetry extends Schema.Class<OpenRetry>(
  "@effect-agent/platform-cloudflare/DurableAgentRuntime/OpenRetry",
)({
  step: Schema.Int,
  name: Schema.String,
  /** Attempts that failed so far. */
  failed: Schema.Int,
  /** The attempts its policy allows, when it counts them. */
  attempts: Schema.optionalKey(Schema.Int),
  lastError: Schema.String,
  lastFailedAt: Schema.Finite,
  nextAttemptAt: Schema.Finite,
}) {}

/** One Submission as recovery sees it now. */
export class SubmissionInspection extends Schema.Class<SubmissionInspection>(
  "@effect-agent/platform-cloudflare/DurableAgentRuntime/SubmissionInspection",
)({
  row: Snapshot,
  /** What recovery would decide for it now (nothing is executed). */
  decision: RecoveryDecision,
  openApproval: Schema.optionalKey(OpenApproval),
  openUncertain: Schema.optionalKey(OpenUncertainStep),
  /** The retried step whose backoff it waits in, if it does. */
  openRetry: Schema.optionalKey(OpenRetry),
  /** The Thread sequence of its newest canonical record (0 without records). */
  lastSequence: Schema.Int,
}) {}

/** `inspect`. @internal */
export const makeInspect = (env: RuntimeEnv) =>
  spanned("DurableAgentRuntime.inspect")(function* (submissionId: SubmissionId) {
    const found = yield* env.ledger.lookup(submissionId)
    if (Option.isNone(found)) return Option.none<SubmissionInspection>()
    const row = found.value
    const records = yield* env.history.forSubmission(submissionId)
    const journal = readJournal(records.map((record) => record.entry))
    const now = yield* Clock.currentTimeMillis
    const decision: RecoveryDecision =
      row.state === "settled"
        ? { _tag: "NoAction" }
        : classifyRecovery(row, now, journal, yield* joinFacts(env, row))
    const at = (matches: (record: (typeof records)[number]) => boolean) =>
      records.findLast(matches)?.recordedAt
    const approval = journal.openApproval
    const approvalRecord =
      approval === undefined
        ? undefined
        : records.findLast(
            (record) => record.entry._tag === "ApprovalRequested" && record.entry.step === approval,
          )
    const open = journal.openUncertain
    const reconcile = open === undefined ? undefined : reconcileStatus(open, now)
    const retryWait = row.wait?._tag === "Retry" && row.state !== "settled" ? row.wait : undefined
    const lastFailure =
      retryWait === undefined ? undefined : journal.positions.get(retryWait.step)?.attemptsFailed?.at(-1)
    return Option.some(
      SubmissionInspection.make({
        row,
        decision,
        lastSequence: records.at(-1)?.sequence ?? 0,
        ...(approvalRecord?.entry._tag === "ApprovalRequested"
          ? {
              openApproval: OpenApproval.make({
                step: approvalRecord.entry.step,
                payload: approvalRecord.entry.payload,
                since: approvalRecord.recordedAt,
              }),
            }
          : {}),
        ...(retryWait === undefined || lastFailure === undefined
          ? {}
          : {
              openRetry: OpenRetry.make({
                step: retryWait.step,
                name: retryWait.name,
                failed: lastFailure.attempt,
                ...(retryWait.attempts === undefined ? {} : { attempts: retryWait.attempts }),
                lastError: lastFailure.error,
                lastFailedAt: lastFailure.failedAt,
                nextAttemptAt: lastFailure.retryAt,
              }),
            }),
        ...(open === undefined || reconcile === undefined
          ? {}
          : {
              openUncertain: OpenUncertainStep.make({
                step: open.step,
                name: open.name,
                since:
                  at((r) => r.entry._tag === "UnknownOutcomeRecorded" && r.entry.step === open.step) ??
                  at((r) => r.entry._tag === "UncertainStepStarted" && r.entry.step === open.step) ??
                  row.createdAt,
                reconcile: ReconcileState.make({
                  status:
                    reconcile._tag === "None"
                      ? "none"
                      : reconcile._tag === "Due"
                        ? "due"
                        : reconcile._tag === "Backoff"
                          ? "backoff"
                          : "exhausted",
                  allowed: open.reconcileAttempts,
                  started: open.reconciles,
                  ...(reconcile._tag === "Backoff" ? { notBefore: reconcile.notBefore } : {}),
                  ...(open.lastAnswer === undefined ? {} : { lastAnswer: open.lastAnswer }),
                }),
              }),
            }),
      }),
    )
  })

/** The decision recovery would make for one nonterminal row now, as a report. */
const preview = (env: RuntimeEnv, row: SubmissionSnapshot, now: number) =>
  Effect.gen(function* () {
    const journal = recoveryNeedsHistory(row, now) ? yield* loadJournal(env, row.submissionId) : EMPTY_JOURNAL
    const decision = classifyRecovery(row, now, journal, yield* joinFacts(env, row))
    return RecoveryReport.make({
      submissionId: row.submissionId,
      threadId: row.threadId,
      decision,
      disposition: dispositionOf(decision),
    })
  })

/** `previewRecovery`: one report per nonterminal Submission, nothing executed. @internal */
export const makePreviewRecovery = (env: RuntimeEnv) =>
  Effect.gen(function* () {
    const rows = yield* Stream.runCollect(env.ledger.scanNonterminal)
    const now = yield* Clock.currentTimeMillis
    return yield* Effect.forEach(rows, (row) => preview(env, row, now))
  }).pipe(withSpanFast("DurableAgentRuntime.previewRecovery"))
