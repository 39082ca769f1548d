/**
 * A typed client for Workers: given a `ThreadObject` namespace binding and a Thread, it routes
 * to the Object that hosts the Thread and exposes its calls as Effects, each failing with
 * exactly the errors its call declares (plus `ThreadObjectUnavailable` when the Object cannot
 * be reached). `client.agent(definition)` gives the calls of one agent typed by its Schemas;
 * the untyped `submit` and the reads stay for routers that forward JSON.
 *
 * By default a Thread lives in the Object named after it. Pass `objectName` to host several
 * Threads (lanes) in one Object; they then share its alarm and maintenance record.
 */
import { Cause, Effect, Exit, Option, Schema } from "effect"
import { withSpanFast } from "./core/internal/spanned.ts"
import type { ApprovalDecision, UnknownResolution } from "./core/DurableAgentRuntime.ts"
import {
  type AgentClient,
  type AgentContract,
  type Invoke,
  makeAgentClient,
  type ScheduleOptions,
  type SendEventOptions,
  type SubmitMode,
} from "./internal/client/agentClient.ts"
import { rememberInvoke } from "./internal/client/invokers.ts"
import type { AgentEvent } from "./core/AgentEvent.ts"
import type { SubmissionState } from "./core/SubmissionLedger.ts"
import type { CallName, CallSuccess } from "./internal/object/calls.ts"
import type { WaitingKind } from "./internal/object/pageViews.ts"
import { ThreadId } from "./core/Identifiers.ts"
import { ObjectName } from "./core/internal/outbox/parentLink.ts"
import { InvalidRequest } from "./internal/object/callErrors.ts"
import { Caller } from "./internal/object/requests.ts"
import { fromRpcResult, type ThreadClientError, ThreadObjectUnavailable } from "./internal/object/rpc.ts"
import type { ThreadObjectRpc } from "./ThreadObject.ts"

export {
  type AgentClient,
  type AgentContract,
  type AgentSettlement,
  InvalidAgentInput,
  InvalidAgentOutput,
  type ScheduleOptions,
  type SendEventOptions,
  type SubmitMode,
  type SubmitOptions,
} from "./internal/client/agentClient.ts"
export { InvalidSchedule } from "./core/DurableAgentRuntime.ts"
export { ScheduleInfo, ScheduleRefusal } from "./core/SubmissionLedger.ts"
export { EventReceipt, EventRefused, EventRefusalReason } from "./core/AgentEvent.ts"
export {
  InvalidRequest,
  ThreadObjectFailure,
  ThreadObjectFailureReason,
  Unauthorized,
} from "./internal/object/callErrors.ts"
export type { CallError, CallKind, CallName, CallSuccess } from "./internal/object/calls.ts"
export { Caller } from "./internal/object/requests.ts"
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
  UnreadDeadline,
  VerifyReport,
  Violation,
} from "./internal/operator/reports.ts"
export { type ThreadClientError, ThreadObjectError, ThreadObjectUnavailable } from "./internal/object/rpc.ts"
export {
  SchedulePage,
  SubmissionPage,
  SubmissionSummary,
  ThreadPage,
  ThreadSummary,
  WaitingKind,
} from "./internal/object/pageViews.ts"
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

/** The calls of one Thread. Each fails with its own call's errors (`ThreadClientError<call>`). */
export interface ThreadClient {
  readonly threadId: string
  /** The calls of `agent` on this Thread, typed by its input and output Schemas and its events. */
  readonly agent: <I, O, Ev extends AgentEvent.Any = never>(
    agent: AgentContract<I, O, Ev>,
  ) => AgentClient<I, O, Ev>
  /**
   * Admits an encoded (JSON) input for the agent `agentId`; the same idempotency key returns the
   * original receipt. With `mode: "join"` the input joins the Thread's running Submission (its
   * agent reads it at its next step boundary and it settles with it) or is refused with
   * `JoinRefused`; `"join-or-queue"` queues it instead of refusing. With `notBefore` (epoch ms)
   * it is admitted now and runs no earlier than then, in its place in the lane.
   * `agent(definition).submit` is the typed form.
   */
  readonly submit: (request: {
    readonly agentId: string
    readonly idempotencyKey: string
    readonly input: Schema.Json
    readonly mode?: SubmitMode
    readonly notBefore?: number
  }) => Effect.Effect<CallSuccess<"submit">, ThreadClientError<"submit">>
  /**
   * Schedules the agent `agentId` with an encoded (JSON) input on this Thread: each occurrence
   * admits one Submission (see `ScheduleOptions`); the same definition again changes nothing,
   * another one under the same id replaces it. `agent(definition).schedule` is the typed form.
   */
  readonly schedule: (
    request: ScheduleOptions & { readonly agentId: string; readonly input: Schema.Json },
  ) => Effect.Effect<CallSuccess<"schedule">, ThreadClientError<"schedule">>
  /** Removes a schedule of this Thread's Object; occurrences already admitted run on. */
  readonly unschedule: (
    scheduleId: string,
  ) => Effect.Effect<CallSuccess<"unschedule">, ThreadClientError<"unschedule">>
  /**
   * Every schedule of this Thread's Object, by id, with its next occurrence and its last one, in
   * one answer: past the 32 MiB a call carries (their inputs together) it fails with
   * `InvalidRequest`; `schedulePage` answers any number of them.
   */
  readonly schedules: Effect.Effect<CallSuccess<"schedules">, ThreadClientError<"schedules">>
  /**
   * A page of this Thread's Object's schedules, by id, as `schedules` lists them: up to `limit`
   * (1 to 100, 50 by default) after the id `after`, fewer when their inputs together reach about
   * 8 million characters (always at least one). Follow `next` (as `after`) until it is absent.
   */
  readonly schedulePage: (options?: {
    readonly after?: string
    readonly limit?: number
  }) => Effect.Effect<CallSuccess<"schedulePage">, ThreadClientError<"schedulePage">>
  /**
   * Sends the event `event` to a Submission: kept in its history until a wait for that name
   * takes it (`AgentContext.waitForEvent`), waking the Submission when it waits for it already;
   * idempotent by `eventId` (`replayed` in the receipt). A declared event's payload is decoded
   * with its Schema in the Object; any other is kept as JSON within `maxStoredValueBytes`.
   * Refused with `EventRefused` (a malformed or oversized payload, a settled, aborting or joined
   * Submission), writing nothing. `agent(definition).sendEvent` is the typed form.
   */
  readonly sendEvent: (
    submissionId: string,
    event: string,
    payload: Schema.Json,
    options?: SendEventOptions,
  ) => Effect.Effect<CallSuccess<"sendEvent">, ThreadClientError<"sendEvent">>
  /**
   * Accepts an abort: the Submission settles `aborted` once, and its unsettled children are
   * aborted too. A queued or waiting one settles at the Object's next pass without running
   * again; a running one stops at its next call: a plain step running is cut within
   * `abortPollInterval` (500 ms by default), an uncertain step is never cut (it ends first). A
   * Submission already settled keeps its settlement (the call changes nothing; `awaitSettlement`
   * tells which); an id the Thread does not hold is `SubmissionNotFound`.
   */
  readonly abort: (submissionId: string) => Effect.Effect<void, ThreadClientError<"abort">>
  /**
   * Decides the Submission's open approval request: an approval resumes it, a denial settles it
   * `failed`. Pass `step`, the call position `explain` reports (`WaitingForApproval.step`), to
   * decide that request only: a decision sent again (after its answer was lost) is then
   * `NotPending` once the program asks again, instead of deciding its next request.
   */
  readonly resolveApproval: (
    submissionId: string,
    decision: ApprovalDecision,
    options?: { readonly step?: number },
  ) => Effect.Effect<void, ThreadClientError<"resolveApproval">>
  /**
   * Resolves the Submission's Unknown Outcome: `Succeeded` with the step's result, or `Failed`.
   * Pass `step` (`explain`'s `UnknownOutcome.step`) to resolve that uncertain step only.
   */
  readonly resolveUnknown: (
    submissionId: string,
    resolution: UnknownResolution,
    options?: { readonly step?: number },
  ) => Effect.Effect<void, ThreadClientError<"resolveUnknown">>
  /** Admin retry: revokes a running Claim so the next pass reclaims the Submission. */
  readonly retry: (submissionId: string) => Effect.Effect<void, ThreadClientError<"retry">>
  readonly status: (
    submissionId: string,
  ) => Effect.Effect<CallSuccess<"submissionStatus">, ThreadClientError<"submissionStatus">>
  readonly threadStatus: Effect.Effect<CallSuccess<"threadStatus">, ThreadClientError<"threadStatus">>
  /**
   * A page of this Thread's records, oldest first: up to `limit` (1 to 500, 100 by default) with
   * a sequence after `after`, fewer when their values together reach about 8 million characters
   * (always at least one), so a page of large inputs or results still fits in a call. Follow
   * `next` (as `after`) until it is absent.
   */
  readonly history: (options?: {
    readonly after?: number
    readonly limit?: number
  }) => Effect.Effect<CallSuccess<"history">, ThreadClientError<"history">>
  /**
   * The record of the Submission's step at call `step` (its `StepCompleted`), or null when that
   * call is no completed step: one call that answers one record, without paging the Thread's
   * history. The Object reads the Submission's own records to find it, so its cost grows with
   * the Submission's journal, not with the Thread's.
   */
  readonly completedStep: (
    submissionId: string,
    step: number,
  ) => Effect.Effect<CallSuccess<"completedStep">, ThreadClientError<"completedStep">>
  /**
   * Waits up to `timeoutMillis` (at most 60 s per call) for the Submission's settlement, its
   * output as stored (JSON); `agent(definition).awaitSettlement` decodes it.
   */
  readonly awaitSettlement: (
    submissionId: string,
    timeoutMillis: number,
  ) => Effect.Effect<CallSuccess<"awaitSettlement">, ThreadClientError<"awaitSettlement">>
  /** The Object's maintenance record, alarm and counters. */
  readonly inspectMaintenance: Effect.Effect<
    CallSuccess<"inspectMaintenance">,
    ThreadClientError<"inspectMaintenance">
  >
  /** Why the Submission is where it is: one decisive reason with its evidence. Reads only. */
  readonly explain: (
    submissionId: string,
  ) => Effect.Effect<CallSuccess<"explain">, ThreadClientError<"explain">>
  /** Every due time the Object owes, the alarm they imply and the alarm scheduled. Reads only. */
  readonly obligations: Effect.Effect<CallSuccess<"obligations">, ThreadClientError<"obligations">>
  /** The storage invariants of the Object and every violation found. Reads everything. */
  readonly verify: Effect.Effect<CallSuccess<"verify">, ThreadClientError<"verify">>
  /**
   * Waits up to `timeoutMillis` (at most 60 s) until the Submission moves past `after` (the
   * token of a previous answer; without it the current progress returns at once), and answers
   * its records after that token. Records together over what one call carries (about 8 million
   * characters of JSON: large inputs, step results or events) come a part at a time: the answer
   * then has `more: true` and a token that continues after its last record, which is answered at
   * once. A follower that stops at `state: "settled"` reads on while `more` is set. An `after`
   * that no answer gave (another shape) fails with `InvalidRequest` naming it.
   */
  readonly awaitProgress: (
    submissionId: string,
    options: { readonly after?: string; readonly timeoutMillis: number },
  ) => Effect.Effect<CallSuccess<"awaitProgress">, ThreadClientError<"awaitProgress">>
  /** A page of this Thread's Submissions, settled ones included, oldest first. */
  readonly submissions: (options?: {
    readonly after?: number
    readonly limit?: number
  }) => Effect.Effect<CallSuccess<"submissions">, ThreadClientError<"submissions">>
  /**
   * The Threads with Submissions in this Thread's Object (all of its lanes: an authorization
   * check that separates tenants sharing one Object should refuse it).
   */
  readonly threads: Effect.Effect<ReadonlyArray<string>, ThreadClientError<"threads">>
  /**
   * A page of this Thread's Submissions for operators: filtered by state, agent and why they
   * wait; in queue order (the head first) when only unsettled states are asked for, newest
   * first otherwise. Each page examines a bounded window of the lane, so a sparse filter may
   * answer a short page: follow `next` (as `cursor`, with the same filter) until it is absent.
   */
  readonly submissionPage: (options?: {
    readonly states?: ReadonlyArray<SubmissionState>
    readonly agentId?: string
    readonly waiting?: WaitingKind
    readonly cursor?: number
    readonly limit?: number
  }) => Effect.Effect<CallSuccess<"submissionPage">, ThreadClientError<"submissionPage">>
  /**
   * A page of the Threads of this Thread's Object with their counts and heads, and the Object's
   * unsettled count (its lanes, like `threads`); the first page also answers the workflow
   * completions the Object keeps for executions not yet started (`early`), when it keeps any.
   */
  readonly threadPage: (options?: {
    readonly after?: string
    readonly limit?: number
  }) => Effect.Effect<CallSuccess<"threadPage">, ThreadClientError<"threadPage">>
  /** The Submission this Thread admitted under `idempotencyKey`, or null. */
  readonly findSubmission: (
    idempotencyKey: string,
  ) => Effect.Effect<CallSuccess<"findSubmission">, ThreadClientError<"findSubmission">>
  /** A droppable hint to run a maintenance pass soon; never needed for correctness. */
  readonly wake: Effect.Effect<void, ThreadClientError<"wake">>
  /** Admin: rebuilds a damaged maintenance record from the ledger; a no-op on a healthy one. */
  readonly repairMaintenance: Effect.Effect<
    CallSuccess<"repairMaintenance">,
    ThreadClientError<"repairMaintenance">
  >
  /**
   * Admin: removes one settled Submission's data now (its row, records, sent messages and key),
   * without archiving; `ForgetRefused` while it is not settled or still needed. An id already
   * forgotten, or unknown in this Thread, answers the same way; the id a workflow execution not
   * yet started will be admitted as (`threadPage`'s `early`) removes the completions kept for it.
   */
  readonly forget: (submissionId: string) => Effect.Effect<void, ThreadClientError<"forget">>
}

const decodeCaller = Schema.decodeUnknownExit(Caller)
const encodeCallerSync = Schema.encodeSync(Caller)

/** The identity as it travels, or why the Object would refuse it. */
const encodeCaller = (caller: { readonly subject: string; readonly credential?: string }) => {
  const decoded = decodeCaller(caller)
  if (Exit.isSuccess(decoded)) return encodeCallerSync(decoded.value)
  const issue = Cause.findErrorOption(decoded.cause)
  return new Error(
    `the caller is invalid (a subject of 1 to 256 characters, a credential of at most 4,096): ${
      Option.isSome(issue) ? issue.value.message : "it could not be encoded"
    }`,
  )
}

const decodeThreadId = Schema.decodeUnknownExit(ThreadId)
const decodeObjectName = Schema.decodeUnknownExit(ObjectName)

/**
 * Why the Thread's address cannot reach it, or undefined: a Thread id the Object would refuse,
 * or an Object name no child address could name (the Object is not asked, nor created).
 */
const addressError = (threadId: string, objectName: string | undefined) => {
  const issue = (exit: Exit.Exit<unknown, Schema.SchemaError>) => {
    if (Exit.isSuccess(exit)) return undefined
    const error = Cause.findErrorOption(exit.cause)
    return Option.isSome(error) ? error.value.message : "it could not be decoded"
  }
  const thread = issue(decodeThreadId(threadId))
  if (thread !== undefined) return new Error(`the threadId is invalid: ${thread}`)
  const object = objectName === undefined ? undefined : issue(decodeObjectName(objectName))
  return object === undefined ? undefined : new Error(`the objectName is invalid: ${object}`)
}

/**
 * Why a call did not reach the Object, or its answer did not come back. A request or an answer
 * over the platform's limit for what a call may carry (32 MiB; `schedules` answers every
 * schedule with its input, `schedulePage` a bounded page) is `InvalidRequest`: calling again
 * cannot succeed.
 */
const transportError = (entryPoint: string, cause: unknown, request: unknown) => {
  const message = cause instanceof Error ? cause.message : "the Object could not be reached"
  if (message.startsWith("Serialized RPC arguments or return values are limited"))
    return new InvalidRequest({
      entryPoint,
      message: `the request or its answer is over the 32 MiB a call can carry: ${message}`,
    })
  // The structured clone of a call's arguments recurses: a value some 3,700 levels deep
  // overflows the caller's stack before anything is sent. Measured only on this failure path.
  if (cause instanceof RangeError && /call stack/i.test(message)) {
    const depth = depthOf(request)
    if (depth >= MIN_UNSENDABLE_DEPTH)
      return new InvalidRequest({
        entryPoint,
        message: `the request nests ${depth} levels deep, too deep to be sent (${message})`,
      })
  }
  return new ThreadObjectUnavailable({ entryPoint, message })
}

/**
 * A request shallower than this does not overflow the clone (it carries some 3,700 levels): a
 * stack overflow then came from the Object, which stays `ThreadObjectUnavailable`.
 */
const MIN_UNSENDABLE_DEPTH = 1_000

/** How many levels of arrays and objects `value` nests, counted without recursion. */
const depthOf = (value: unknown): number => {
  let deepest = 0
  const pending: Array<readonly [unknown, number]> = [[value, 1]]
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const [inner, depth] = next
    if (typeof inner !== "object" || inner === null) continue
    deepest = Math.max(deepest, depth)
    for (const child of Object.values(inner)) pending.push([child, depth + 1])
  }
  return deepest
}

/** A client of the Thread `threadId` in `namespace`. */
export const make = (
  namespace: ThreadNamespace,
  threadId: string,
  options: {
    /**
     * The Object that hosts the Thread (1 to 256 characters, as a child's address names it); the
     * Thread's own by default. A name or a `threadId` that cannot address a Thread fails every
     * call with `InvalidRequest` naming it, without asking any Object.
     */
    readonly objectName?: string
    /** The identity sent with every call, for the Object's authorization check. */
    readonly caller?: { readonly subject: string; readonly credential?: string }
  } = {},
): ThreadClient => {
  // RPC arguments are structured-cloned: the identity travels encoded, and the Object decodes it.
  // One the Object would refuse fails every call with `InvalidRequest`, naming what is wrong.
  const caller = options.caller === undefined ? undefined : encodeCaller(options.caller)
  // An address that cannot reach the Thread fails every call the same way, asking no Object.
  const refused = addressError(threadId, options.objectName) ?? (caller instanceof Error ? caller : undefined)
  const stub = () => namespace.getByName(options.objectName ?? threadId) as ThreadObjectRpc

  const invoke: Invoke = <K extends CallName>(name: K, request: unknown) =>
    (refused !== undefined
      ? Effect.fail(new InvalidRequest({ entryPoint: name, message: refused.message }))
      : Effect.tryPromise({
          try: () =>
            caller === undefined || caller instanceof Error
              ? stub()[name](request)
              : stub()[name](request, caller),
          catch: (cause) => transportError(name, cause, request),
        })
    ).pipe(
      Effect.flatMap((result) => fromRpcResult(name, result)),
      withSpanFast(`ThreadClient.${name}`, { attributes: { threadId } }),
    )

  const address = (submissionId: string) => ({ threadId, submissionId })

  return rememberInvoke(invoke, {
    threadId,
    agent: (agent) => makeAgentClient(invoke, threadId, agent),
    submit: (request) => invoke("submit", { threadId, ...request }),
    schedule: (request) => invoke("schedule", { threadId, ...request }),
    unschedule: (scheduleId) => invoke("unschedule", { threadId, scheduleId }),
    schedules: invoke("schedules", { threadId }),
    schedulePage: (page = {}) => invoke("schedulePage", { threadId, ...page }),
    sendEvent: (submissionId, event, payload, options) => {
      // Drawn now, not when the Effect runs: a retry of the returned Effect sends the same event.
      const eventId = options?.eventId ?? crypto.randomUUID()
      return invoke("sendEvent", { ...address(submissionId), event, eventId, payload })
    },
    abort: (submissionId) => invoke("abort", address(submissionId)),
    resolveApproval: (submissionId, decision, options) =>
      invoke("resolveApproval", {
        ...address(submissionId),
        decision,
        ...(options?.step === undefined ? {} : { step: options.step }),
      }),
    resolveUnknown: (submissionId, resolution, options) =>
      invoke("resolveUnknown", {
        ...address(submissionId),
        resolution,
        ...(options?.step === undefined ? {} : { step: options.step }),
      }),
    retry: (submissionId) => invoke("retry", address(submissionId)),
    status: (submissionId) => invoke("submissionStatus", address(submissionId)),
    threadStatus: invoke("threadStatus", { threadId }),
    history: (page = {}) => invoke("history", { threadId, ...page }),
    completedStep: (submissionId, step) => invoke("completedStep", { ...address(submissionId), step }),
    awaitSettlement: (submissionId, timeoutMillis) =>
      invoke("awaitSettlement", { ...address(submissionId), timeoutMillis }),
    inspectMaintenance: invoke("inspectMaintenance", { threadId }),
    explain: (submissionId) => invoke("explain", address(submissionId)),
    obligations: invoke("obligations", { threadId }),
    verify: invoke("verify", { threadId }),
    awaitProgress: (submissionId, progress) =>
      invoke("awaitProgress", { ...address(submissionId), ...progress }),
    submissions: (page = {}) => invoke("submissions", { threadId, ...page }),
    threads: invoke("threads", { threadId }),
    submissionPage: (page = {}) => invoke("submissionPage", { threadId, ...page }),
    threadPage: (page = {}) => invoke("threadPage", { threadId, ...page }),
    findSubmission: (idempotencyKey) => invoke("findSubmission", { threadId, idempotencyKey }),
    wake: invoke("wake", { threadId }),
    repairMaintenance: invoke("repairMaintenance", { threadId }),
    forget: (submissionId) => invoke("forget", address(submissionId)),
  })
}
