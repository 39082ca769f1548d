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
import type { RpcResult } from "./internal/object/protocol.ts"
import { fromRpcResult, type ThreadObjectError, ThreadObjectUnavailable } from "./internal/object/rpc.ts"
import {
  HistoryPageView,
  MaintenanceInspection,
  SubmissionStatus,
  ThreadStatus,
} from "./internal/object/views.ts"
import type { ThreadObjectRpc } from "./ThreadObject.ts"

export { InvalidRequest } from "./internal/object/protocol.ts"
export { ThreadObjectError, ThreadObjectUnavailable } from "./internal/object/rpc.ts"
export {
  HistoryPageView,
  MaintenanceCounters,
  MaintenanceInspection,
  SubmissionStatus,
  ThreadStatus,
} from "./internal/object/views.ts"

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
}

/** A client of the Thread `threadId` in `namespace`. */
export const make = (
  namespace: ThreadNamespace,
  threadId: string,
  options: { readonly objectName?: string } = {},
): ThreadClient => {
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

  return {
    threadId,
    submit: (request) => call("submit", Receipt, (rpc) => rpc.submit({ threadId, ...request })),
    abort: (submissionId) => call("abort", Schema.Void, (rpc) => rpc.abort(address(submissionId))),
    resolveApproval: (submissionId, decision) =>
      call("resolveApproval", Schema.Void, (rpc) =>
        rpc.resolveApproval({ ...address(submissionId), decision }),
      ),
    resolveUnknown: (submissionId, resolution) =>
      call("resolveUnknown", Schema.Void, (rpc) =>
        rpc.resolveUnknown({ ...address(submissionId), resolution }),
      ),
    retry: (submissionId) => call("retry", Schema.Void, (rpc) => rpc.retry(address(submissionId))),
    status: (submissionId) =>
      call("submissionStatus", SubmissionStatus, (rpc) => rpc.submissionStatus(address(submissionId))),
    threadStatus: call("threadStatus", ThreadStatus, (rpc) => rpc.threadStatus({ threadId })),
    history: (page = {}) => call("history", HistoryPageView, (rpc) => rpc.history({ threadId, ...page })),
    awaitSettlement: (submissionId, timeoutMillis) =>
      call("awaitSettlement", Settlement, (rpc) =>
        rpc.awaitSettlement({ ...address(submissionId), timeoutMillis }),
      ),
    inspectMaintenance: call("inspectMaintenance", MaintenanceInspection, (rpc) => rpc.inspectMaintenance()),
  }
}
