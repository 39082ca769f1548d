/**
 * The calls of a `ThreadObject`, each declared once: its kind, its request, its success and the
 * errors it can fail with. Everything else is derived from this table: the Durable Object's
 * methods and the dispatch that decodes, authorizes and runs a call (`dispatch.ts`), the
 * result envelope's encoding and decoding (`rpc.ts`), `ThreadObjectRpc`, and the client's
 * types. It holds Schemas only, so the Worker's client imports it without the handlers.
 */
import { Schema } from "effect"
import {
  InvalidSchedule,
  JoinRefused,
  NotPending,
  Receipt,
  ScheduleRequest,
  SettlementTimeout,
  SubmitRequest,
} from "../../core/DurableAgentRuntime.ts"
import { type SubmissionId, ThreadId } from "../../core/Identifiers.ts"
import { EventReceipt, EventRefused } from "../../core/AgentEvent.ts"
import {
  AdmissionRefused,
  IdempotencyConflict,
  ScheduleInfo,
  Settlement,
  SubmissionNotFound,
} from "../../core/SubmissionLedger.ts"
import { ForgetRefused } from "../../core/Retention.ts"
import { HistoryRecord } from "../../core/ThreadHistory.ts"
import { MaintenanceRecordDamaged } from "../maintenance/errors.ts"
import { MaintenanceRepair } from "../maintenance/repair.ts"
import {
  ObjectObligations,
  SubmissionExplanation,
  SubmissionProgress,
  VerifyReport,
} from "../operator/reports.ts"
import { EarlyEventAnswer, EarlyEventInput, EarlyEventRefused } from "../workflow/earlyEventCall.ts"
import { InvalidRequest, ThreadObjectFailure, Unauthorized } from "./callErrors.ts"
import { SchedulePage, SubmissionPage, ThreadPage } from "./pageViews.ts"
import {
  ApprovalInput,
  AwaitInput,
  CompletedStepInput,
  EventInput,
  FindSubmissionInput,
  HistoryInput,
  ProgressInput,
  SubmissionAddress,
  SubmissionPageInput,
  SubmissionsInput,
  ThreadAddress,
  ThreadPageInput,
  SchedulePageInput,
  UnknownInput,
  UnscheduleInput,
} from "./requests.ts"
import { HistoryPageView, MaintenanceInspection, SubmissionStatus, ThreadStatus } from "./statusViews.ts"

/**
 * What a call does, for the application's authorization check: `read` answers without writing;
 * `mutate` adds work or schedules it (submit, an event, a schedule, the wake hint); `operate` acts on accepted work or
 * on the Object's machinery, as an operator or a reviewer would (approve or deny, resolve an
 * Unknown Outcome, abort, retry, repair, forget).
 */
export type CallKind = "read" | "mutate" | "operate"

/** What every request carries: the Thread it addresses and, for some, one of its Submissions. */
interface Addressed {
  readonly threadId: ThreadId
  readonly submissionId?: SubmissionId
}

/** One call. `error` is everything it can fail with: its own errors and the shared ones. */
export interface ObjectCall<
  Kind extends CallKind = CallKind,
  Request extends Schema.Codec<Addressed, unknown> = Schema.Codec<Addressed, unknown>,
  Success extends Schema.Top = Schema.Top,
  Error extends Schema.Top = Schema.Top,
> {
  readonly kind: Kind
  readonly request: Request
  readonly success: Success
  readonly error: Error
}

/** What `unschedule` answers: whether a schedule of that id was there. */
export const Unscheduled = Schema.Struct({ removed: Schema.Boolean })

/** The errors every call shares: a refused request or caller, or a failure inside the Object. */
const SHARED_ERRORS = [InvalidRequest, Unauthorized, ThreadObjectFailure] as const

const call = <
  const Kind extends CallKind,
  Request extends Schema.Codec<Addressed, unknown>,
  Success extends Schema.Top,
  const Errors extends ReadonlyArray<Schema.Top>,
>(
  kind: Kind,
  request: Request,
  success: Success,
  errors: Errors,
) => ({ kind, request, success, error: Schema.Union([...errors, ...SHARED_ERRORS]) })

/**
 * Every call of a `ThreadObject`. To add a call, add its entry here (the errors listed are its
 * own: `InvalidRequest`, `Unauthorized` and `ThreadObjectFailure` come with every call) and its
 * handler in `handlers.ts` or `operatorHandlers.ts`; the Object's method, its authorization and
 * its envelope follow, and the client reaches it by name (add a method to `ThreadClient` for it).
 * A mutation's own errors include `MaintenanceRecordDamaged`: it refuses to run on a record it
 * cannot trust. Its failure to arm the alarm is a `ThreadObjectFailure` with reason `alarm`
 * (nothing ran), like any other failure the caller can only retry.
 */
export const ThreadObjectCalls = {
  submit: call("mutate", SubmitRequest, Receipt, [
    AdmissionRefused,
    IdempotencyConflict,
    JoinRefused,
    MaintenanceRecordDamaged,
  ]),
  sendEvent: call("mutate", EventInput, EventReceipt, [
    EventRefused,
    SubmissionNotFound,
    MaintenanceRecordDamaged,
  ]),
  // A workflow's deferred completion: sent to the Submission admitted under the key, or kept
  // for its admission (`SubmissionLedger.keepEarly`).
  sendEventByKey: call("mutate", EarlyEventInput, EarlyEventAnswer, [
    EventRefused,
    EarlyEventRefused,
    SubmissionNotFound,
    MaintenanceRecordDamaged,
  ]),
  schedule: call("mutate", ScheduleRequest, ScheduleInfo, [
    InvalidSchedule,
    AdmissionRefused,
    MaintenanceRecordDamaged,
  ]),
  unschedule: call("mutate", UnscheduleInput, Unscheduled, [MaintenanceRecordDamaged]),
  schedules: call("read", ThreadAddress, Schema.Array(ScheduleInfo), []),
  schedulePage: call("read", SchedulePageInput, SchedulePage, []),
  abort: call("operate", SubmissionAddress, Schema.Void, [SubmissionNotFound, MaintenanceRecordDamaged]),
  resolveApproval: call("operate", ApprovalInput, Schema.Void, [
    SubmissionNotFound,
    NotPending,
    MaintenanceRecordDamaged,
  ]),
  resolveUnknown: call("operate", UnknownInput, Schema.Void, [
    SubmissionNotFound,
    NotPending,
    MaintenanceRecordDamaged,
  ]),
  retry: call("operate", SubmissionAddress, Schema.Void, [
    SubmissionNotFound,
    NotPending,
    MaintenanceRecordDamaged,
  ]),
  submissionStatus: call("read", SubmissionAddress, SubmissionStatus, [SubmissionNotFound]),
  threadStatus: call("read", ThreadAddress, ThreadStatus, []),
  history: call("read", HistoryInput, HistoryPageView, []),
  completedStep: call("read", CompletedStepInput, Schema.NullOr(HistoryRecord), [SubmissionNotFound]),
  awaitSettlement: call("read", AwaitInput, Settlement, [SubmissionNotFound, SettlementTimeout]),
  inspectMaintenance: call("read", ThreadAddress, MaintenanceInspection, []),
  explain: call("read", SubmissionAddress, SubmissionExplanation, [SubmissionNotFound]),
  obligations: call("read", ThreadAddress, ObjectObligations, []),
  verify: call("read", ThreadAddress, VerifyReport, []),
  awaitProgress: call("read", ProgressInput, SubmissionProgress, [SubmissionNotFound]),
  submissions: call("read", SubmissionsInput, Schema.Array(SubmissionStatus), []),
  threads: call("read", ThreadAddress, Schema.Array(ThreadId), []),
  submissionPage: call("read", SubmissionPageInput, SubmissionPage, []),
  threadPage: call("read", ThreadPageInput, ThreadPage, []),
  findSubmission: call("read", FindSubmissionInput, Schema.NullOr(SubmissionStatus), []),
  wake: call("mutate", ThreadAddress, Schema.Void, []),
  repairMaintenance: call("operate", ThreadAddress, MaintenanceRepair, []),
  forget: call("operate", SubmissionAddress, Schema.Void, [ForgetRefused, MaintenanceRecordDamaged]),
} satisfies Record<string, ObjectCall>

/** The table's type. */
export type ThreadObjectCalls = typeof ThreadObjectCalls

/** The name of a call. */
export type CallName = keyof ThreadObjectCalls

/** The names of the calls of one kind. */
export type CallsOfKind<Kind extends CallKind> = {
  readonly [K in CallName]: ThreadObjectCalls[K]["kind"] extends Kind ? K : never
}[CallName]

/** The decoded request of a call. */
export type CallRequest<K extends CallName> = ThreadObjectCalls[K]["request"]["Type"]

/** The request of a call as it is sent (JSON). */
export type CallRequestEncoded<K extends CallName> = ThreadObjectCalls[K]["request"]["Encoded"]

/** What a call answers with. */
export type CallSuccess<K extends CallName> = ThreadObjectCalls[K]["success"]["Type"]

/** Everything a call can fail with. */
export type CallError<K extends CallName> = ThreadObjectCalls[K]["error"]["Type"]

/** The names of every call, in the table's order. */
export const CALL_NAMES = Object.keys(ThreadObjectCalls) as ReadonlyArray<CallName>
