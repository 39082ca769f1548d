/**
 * The receiver's side of a routed request from another Object (`portCall`): a child's
 * admission, its settlement and an abort go to this Object's runtime; a description of a child
 * by its idempotency key reads the ledger.
 */
import { Effect, Option } from "effect"
import { DurableAgentRuntime } from "../../core/DurableAgentRuntime.ts"
import type { ThreadMessage } from "../../core/MessageOutbox.ts"
import { SubmissionLedger } from "../../core/SubmissionLedger.ts"
import { makePortCall } from "./portCall.ts"

/** A message from another Object's runtime, received by this one's. */
const receive = <M extends ThreadMessage>(message: M, messageId: string) =>
  Effect.gen(function* () {
    const runtime = yield* DurableAgentRuntime
    return yield* runtime.receive(message, messageId)
  })

/** @internal The `portCall` entry point of a `ThreadObject`. */
export const portCall = makePortCall<DurableAgentRuntime | SubmissionLedger>({
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
})
