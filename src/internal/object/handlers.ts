/**
 * The entry points of a `ThreadObject` as Effects over its incarnation's services. Every input
 * is decoded first; a refused input writes nothing. Mutations go through the shared mutation
 * gate (generation and alarm commit before the body); reads never touch maintenance state.
 * An addressed Submission must belong to the addressed Thread, or it is not found.
 */
import { spanned } from "../../core/internal/spanned.ts"
import { Effect, Option, Schema } from "effect"
import { DurableAgentRuntime, SubmitRequest } from "../../core/DurableAgentRuntime.ts"
import type { ThreadMessage } from "../../core/MessageOutbox.ts"
import type { SubmissionId, ThreadId } from "../../core/Identifiers.ts"
import { SubmissionLedger, SubmissionNotFound } from "../../core/SubmissionLedger.ts"
import { ThreadHistory } from "../../core/ThreadHistory.ts"
import { DurableAlarmError, type MaintenanceRecordDamaged, recordDamageOf } from "../maintenance/errors.ts"
import { CloudflareDurableRuntimeConfig } from "../../CloudflareConfig.ts"
import { ThreadMaintenance } from "../maintenance/maintenance.ts"
import { type Authorization, authorize, type Caller, type PrivilegedEntryPoint } from "./authorization.ts"
import { readCounters } from "./metrics.ts"
import { makePortCall } from "./portCall.ts"
import { readMaintenanceView } from "./operatorReads.ts"
import {
  ApprovalInput,
  AwaitInput,
  HistoryInput,
  InvalidRequest,
  SubmissionAddress,
  SubmissionCommand,
  ThreadAddress,
  UnknownInput,
} from "./requests.ts"
import { HistoryPageView, inspection, submissionStatus, ThreadStatus } from "./statusViews.ts"

/**
 * How far a raw request may exceed `limits.maxInputBytes` before decoding, in UTF-16 units: the
 * envelope around an input (ids, keys). The input itself is measured once, when it is prepared.
 */
const REQUEST_OVERHEAD_CHARS = 65_536

/** Decodes a raw RPC input, naming the entry point and the problem. @internal */
export const decodeInput =
  <A, I>(entryPoint: string, schema: Schema.Codec<A, I>) =>
  (raw: unknown): Effect.Effect<A, InvalidRequest, CloudflareDurableRuntimeConfig> =>
    Effect.gen(function* () {
      const maxBytes = (yield* CloudflareDurableRuntimeConfig).limits.maxInputBytes
      let size: number
      try {
        size = JSON.stringify(raw)?.length ?? 0
      } catch {
        return yield* new InvalidRequest({ entryPoint, message: "the request is not JSON-serializable" })
      }
      if (size > maxBytes + REQUEST_OVERHEAD_CHARS) {
        return yield* new InvalidRequest({
          entryPoint,
          message: `the request is ${size} characters, over the limit of ${maxBytes + REQUEST_OVERHEAD_CHARS}`,
        })
      }
      return yield* Schema.decodeUnknownEffect(schema)(raw).pipe(
        Effect.mapError((error) => new InvalidRequest({ entryPoint, message: error.message })),
      )
    })

const notFound = (submissionId: SubmissionId, threadId: ThreadId) =>
  new SubmissionNotFound({ submissionId, message: `no submission ${submissionId} in thread ${threadId}` })

interface Address {
  readonly threadId: ThreadId
  readonly submissionId: SubmissionId
}

/** The row of an addressed Submission, refused when it belongs to another Thread. */
const addressed = (address: Address) =>
  Effect.gen(function* () {
    const ledger = yield* SubmissionLedger
    const row = yield* ledger.lookup(address.submissionId)
    if (Option.isNone(row) || row.value.threadId !== address.threadId) {
      return yield* notFound(address.submissionId, address.threadId)
    }
    return row.value
  })

/** A message from another Object's runtime, received by this one's. */
const receive = <M extends ThreadMessage>(message: M, messageId: string) =>
  Effect.gen(function* () {
    const runtime = yield* DurableAgentRuntime
    return yield* runtime.receive(message, messageId)
  })
/** A mutation refused because the maintenance record is damaged answers with the damage. @internal */
export const refuseOnDamage = <A, E, R>(
  effect: Effect.Effect<A, E, R>,
): Effect.Effect<A, E | MaintenanceRecordDamaged, R> =>
  Effect.mapError(effect, (error: E) =>
    error instanceof DurableAlarmError ? (recordDamageOf(error) ?? error) : error,
  )

/** @internal */
export const makeEntryPoints = (authorization: Authorization | undefined) => {
  const decode = decodeInput

  /** Decodes an addressed request and runs `body` for it inside the mutation gate. */
  const gated = <A extends Address & { readonly caller?: Caller }, I, E>(
    entryPoint: PrivilegedEntryPoint,
    schema: Schema.Codec<A, I>,
    body: (runtime: DurableAgentRuntime["Service"], request: A) => Effect.Effect<void, E>,
  ) =>
    Effect.fn(`ThreadObject.${entryPoint}`)(function* (raw: unknown) {
      const request = yield* decode(entryPoint, schema)(raw)
      yield* authorize(authorization, {
        entryPoint,
        caller: request.caller,
        threadId: request.threadId,
        submissionId: request.submissionId,
      })
      yield* addressed(request)
      const runtime = yield* DurableAgentRuntime
      const maintenance = yield* ThreadMaintenance
      yield* refuseOnDamage(maintenance.withMutation(body(runtime, request)))
    })

  return {
    submit: spanned("ThreadObject.submit")(function* (raw: unknown) {
      const request = yield* decode("submit", SubmitRequest)(raw)
      const runtime = yield* DurableAgentRuntime
      const maintenance = yield* ThreadMaintenance
      // Every admission limit is checked before the gate: a refused input writes nothing, not
      // even a generation or an alarm.
      const prepared = yield* runtime.prepare(request)
      return yield* refuseOnDamage(maintenance.withMutation(runtime.admit(prepared)))
    }),
    abort: gated("abort", SubmissionCommand, (runtime, request) => runtime.abort(request.submissionId)),
    retry: gated("retry", SubmissionCommand, (runtime, request) => runtime.retry(request.submissionId)),
    resolveApproval: gated("resolveApproval", ApprovalInput, (runtime, request) =>
      runtime.resolveApproval(request.submissionId, request.decision),
    ),
    resolveUnknown: gated("resolveUnknown", UnknownInput, (runtime, request) =>
      runtime.resolveUnknown(request.submissionId, request.resolution),
    ),
    submissionStatus: Effect.fn("ThreadObject.submissionStatus")(function* (raw: unknown) {
      const request = yield* decode("submissionStatus", SubmissionAddress)(raw)
      return submissionStatus(yield* addressed(request))
    }),
    threadStatus: Effect.fn("ThreadObject.threadStatus")(function* (raw: unknown) {
      const { threadId } = yield* decode("threadStatus", ThreadAddress)(raw)
      const ledger = yield* SubmissionLedger
      const head = yield* ledger.head(threadId)
      return ThreadStatus.make({
        threadId,
        nonterminal: yield* ledger.countNonterminal(threadId),
        ...(Option.isSome(head) ? { head: submissionStatus(head.value) } : {}),
      })
    }),
    history: Effect.fn("ThreadObject.history")(function* (raw: unknown) {
      const request = yield* decode("history", HistoryInput)(raw)
      const history = yield* ThreadHistory
      const page = yield* history.page(request.threadId, {
        ...(request.after === undefined ? {} : { after: request.after }),
        limit: request.limit ?? 100,
      })
      return HistoryPageView.make({
        records: page.records,
        ...(page.next === undefined ? {} : { next: page.next }),
      })
    }),
    awaitSettlement: Effect.fn("ThreadObject.awaitSettlement")(function* (raw: unknown) {
      const request = yield* decode("awaitSettlement", AwaitInput)(raw)
      yield* addressed(request)
      const runtime = yield* DurableAgentRuntime
      return yield* runtime.awaitSettlement(request.submissionId, { timeoutMillis: request.timeoutMillis })
    }),
    portCall: makePortCall<DurableAgentRuntime | SubmissionLedger>({
      AdmitChild: receive,
      ChildSettled: receive,
      AbortChild: receive,
      DescribeChild: (request) =>
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          const row = yield* ledger.lookupByKey(request.threadId, request.idempotencyKey)
          if (Option.isNone(row)) return { _tag: "ChildDescribed" } as const
          return {
            _tag: "ChildDescribed",
            child: {
              submissionId: row.value.submissionId,
              state: row.value.state,
              ...(row.value.settlement === undefined ? {} : { settlement: row.value.settlement }),
            },
          } as const
        }),
    }),
    inspectMaintenance: Effect.fn("ThreadObject.inspectMaintenance")(function* () {
      const view = yield* readMaintenanceView
      return inspection(view, yield* readCounters)
    }),
  }
}

/** @internal */
export type EntryPoints = ReturnType<typeof makeEntryPoints>
