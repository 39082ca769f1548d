/**
 * A typed client for Workers: given a `ThreadObject` namespace binding and a Thread, it routes
 * to the Object that hosts the Thread and exposes its entry points as Effects with typed errors.
 *
 * By default a Thread lives in the Object named after it. Pass `objectName` to host several
 * Threads (lanes) in one Object; they then share its alarm and maintenance record.
 */
import { Effect, Schema } from "effect"
import { type ApprovalDecision, Receipt, type UnknownResolution } from "./core/DurableAgentRuntime.ts"
import type { Settlement as SettlementType } from "./core/SubmissionLedger.ts"
import { Settlement } from "./core/SubmissionLedger.ts"
import type { RpcResult } from "./internal/object/requests.ts"
import { fromRpcResult, type ThreadObjectError, ThreadObjectUnavailable } from "./internal/object/rpc.ts"
import {
  HistoryPageView,
  MaintenanceInspection,
  SubmissionStatus,
  ThreadStatus,
} from "./internal/object/statusViews.ts"
import type { ThreadObjectRpc } from "./ThreadObject.ts"
import { Caller } from "./internal/object/authorization.ts"
import { MaintenanceRepair } from "./internal/maintenance/repair.ts"
import {
  ObjectObligations,
  SubmissionExplanation,
  SubmissionProgress,
  VerifyReport,
} from "./internal/operator/reports.ts"
import { ThreadId } from "./core/Identifiers.ts"

export { InvalidRequest } from "./internal/object/requests.ts"
export { Caller, Unauthorized } from "./internal/object/authorization.ts"
export { MaintenanceRecordDamaged } from "./internal/maintenance/errors.ts"
export { MaintenanceRepair } from "./internal/maintenance/repair.ts"
export {
  AlarmMismatch,
  Invariant,
  ObjectObligations,
  Obligation,
  ObligationSource,
  Reason,
  SubmissionExplanation,
  SubmissionProgress,
  VerifyReport,
  Violation,
} from "./internal/operator/reports.ts"
export { ThreadObjectError, ThreadObjectUnavailable } from "./internal/object/rpc.ts"
export {
  HistoryPageView,
  MaintenanceCounters,
  MaintenanceInspection,
  SubmissionStatus,
  ThreadStatus,
} from "./internal/object/statusViews.ts"

/** Any namespace whose Objects speak the `ThreadObject` protocol. */
export interface ThreadNamespace {
  getByName(name: string): unknown
}

/** Why a client call failed. */
export type ThreadClientError = ThreadObjectError | ThreadObjectUnavailable

/** The entry points of one Thread. */
export interface ThreadClient {
  readonly threadId: string
  /**
   * Admits an input; the same idempotency key returns the original receipt. With `mode:
   * "join"` the input joins the Thread's running Submission (its agent reads it at its next
   * step boundary and it settles with it) or is refused with `JoinRefused`; `"join-or-queue"`
   * queues it instead of refusing.
   */
  readonly submit: (request: {
    readonly agentId: string
    readonly idempotencyKey: string
    readonly input: Schema.Json
    readonly mode?: "queue" | "join" | "join-or-queue"
  }) => Effect.Effect<Receipt, ThreadClientError>
  readonly abort: (submissionId: string) => Effect.Effect<void, ThreadClientError>
  readonly resolveApproval: (
    submissionId: string,
    decision: ApprovalDecision,
  ) => Effect.Effect<void, ThreadClientError>
  readonly resolveUnknown: (
    submissionId: string,
    resolution: UnknownResolution,
  ) => Effect.Effect<void, ThreadClientError>
  /** Admin retry: revokes a running Claim so the next pass reclaims the Submission. */
  readonly retry: (submissionId: string) => Effect.Effect<void, ThreadClientError>
  readonly status: (submissionId: string) => Effect.Effect<SubmissionStatus, ThreadClientError>
  readonly threadStatus: Effect.Effect<ThreadStatus, ThreadClientError>
  readonly history: (options?: {
    readonly after?: number
    readonly limit?: number
  }) => Effect.Effect<HistoryPageView, ThreadClientError>
  /** Waits up to `timeoutMillis` (at most 60 s per call) for the Submission's settlement. */
  readonly awaitSettlement: (
    submissionId: string,
    timeoutMillis: number,
  ) => Effect.Effect<SettlementType, ThreadClientError>
  /** The Object's maintenance record, alarm and counters. */
  readonly inspectMaintenance: Effect.Effect<MaintenanceInspection, ThreadClientError>
  /** Why the Submission is where it is: one decisive reason with its evidence. Reads only. */
  readonly explain: (submissionId: string) => Effect.Effect<SubmissionExplanation, ThreadClientError>
  /** Every due time the Object owes, the alarm they imply and the alarm scheduled. Reads only. */
  readonly obligations: Effect.Effect<ObjectObligations, ThreadClientError>
  /** The storage invariants of the Object and every violation found. Reads everything. */
  readonly verify: Effect.Effect<VerifyReport, ThreadClientError>
  /**
   * Waits up to `timeoutMillis` (at most 60 s) until the Submission moves past `after` (the
   * token of a previous answer; without it the current progress returns at once).
   */
  readonly awaitProgress: (
    submissionId: string,
    options: { readonly after?: string; readonly timeoutMillis: number },
  ) => Effect.Effect<SubmissionProgress, ThreadClientError>
  /** A page of this Thread's Submissions, settled ones included, oldest first. */
  readonly submissions: (options?: {
    readonly after?: number
    readonly limit?: number
  }) => Effect.Effect<ReadonlyArray<SubmissionStatus>, ThreadClientError>
  /** The Threads with Submissions in this Thread's Object. */
  readonly threads: Effect.Effect<ReadonlyArray<string>, ThreadClientError>
  /** A droppable hint to run a maintenance pass soon; never needed for correctness. */
  readonly wake: Effect.Effect<void, ThreadClientError>
  /** Admin: rebuilds a damaged maintenance record from the ledger; a no-op on a healthy one. */
  readonly repairMaintenance: Effect.Effect<MaintenanceRepair, ThreadClientError>
}

/** A client of the Thread `threadId` in `namespace`. */
export const make = (
  namespace: ThreadNamespace,
  threadId: string,
  options: {
    readonly objectName?: string
    /** The identity sent with privileged calls, for the Object's authorization checks. */
    readonly caller?: { readonly subject: string; readonly credential?: string }
  } = {},
): ThreadClient => {
  // RPC arguments are structured-cloned: the identity travels encoded, and the Object decodes it.
  const caller =
    options.caller === undefined ? {} : { caller: Schema.encodeSync(Caller)(Caller.make(options.caller)) }
  const stub = () => namespace.getByName(options.objectName ?? threadId) as ThreadObjectRpc

  const call = <A, I>(
    entryPoint: keyof ThreadObjectRpc,
    value: Schema.Codec<A, I>,
    invoke: (rpc: ThreadObjectRpc) => Promise<RpcResult>,
  ): Effect.Effect<A, ThreadClientError> =>
    Effect.tryPromise({
      try: () => invoke(stub()),
      catch: (cause) =>
        new ThreadObjectUnavailable({
          entryPoint,
          message: cause instanceof Error ? cause.message : "the Object could not be reached",
        }),
    }).pipe(
      Effect.flatMap((result) => fromRpcResult(entryPoint, value, result)),
      Effect.withSpan(`ThreadClient.${entryPoint}`, { attributes: { threadId } }),
    )

  const address = (submissionId: string) => ({ threadId, submissionId })
  const command = (submissionId: string) => ({ threadId, submissionId, ...caller })

  return {
    threadId,
    submit: (request) => call("submit", Receipt, (rpc) => rpc.submit({ threadId, ...request })),
    abort: (submissionId) => call("abort", Schema.Void, (rpc) => rpc.abort(command(submissionId))),
    resolveApproval: (submissionId, decision) =>
      call("resolveApproval", Schema.Void, (rpc) =>
        rpc.resolveApproval({ ...command(submissionId), decision }),
      ),
    resolveUnknown: (submissionId, resolution) =>
      call("resolveUnknown", Schema.Void, (rpc) =>
        rpc.resolveUnknown({ ...command(submissionId), resolution }),
      ),
    retry: (submissionId) => call("retry", Schema.Void, (rpc) => rpc.retry(command(submissionId))),
    status: (submissionId) =>
      call("submissionStatus", SubmissionStatus, (rpc) => rpc.submissionStatus(address(submissionId))),
    threadStatus: call("threadStatus", ThreadStatus, (rpc) => rpc.threadStatus({ threadId })),
    history: (page = {}) => call("history", HistoryPageView, (rpc) => rpc.history({ threadId, ...page })),
    awaitSettlement: (submissionId, timeoutMillis) =>
      call("awaitSettlement", Settlement, (rpc) =>
        rpc.awaitSettlement({ ...address(submissionId), timeoutMillis }),
      ),
    inspectMaintenance: call("inspectMaintenance", MaintenanceInspection, (rpc) => rpc.inspectMaintenance()),
    explain: (submissionId) =>
      call("explain", SubmissionExplanation, (rpc) => rpc.explain(address(submissionId))),
    obligations: call("obligations", ObjectObligations, (rpc) => rpc.obligations({ threadId })),
    verify: call("verify", VerifyReport, (rpc) => rpc.verify({ threadId })),
    awaitProgress: (submissionId, progress) =>
      call("awaitProgress", SubmissionProgress, (rpc) =>
        rpc.awaitProgress({ ...address(submissionId), ...progress }),
      ),
    submissions: (page = {}) =>
      call("submissions", Schema.Array(SubmissionStatus), (rpc) => rpc.submissions({ threadId, ...page })),
    threads: call("threads", Schema.Array(ThreadId), (rpc) => rpc.threads()),
    wake: call("wake", Schema.Void, (rpc) => rpc.wake({ threadId })),
    repairMaintenance: call("repairMaintenance", MaintenanceRepair, (rpc) =>
      rpc.repairMaintenance({ threadId, ...caller }),
    ),
  }
}
