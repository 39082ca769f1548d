/**
 * An operator's decision names the request it answers: the call position `explain` reports
 * (`WaitingForApproval.step`, `UnknownOutcome.step`). A decision sent again after its answer was
 * lost (a retry after `ThreadObjectUnavailable`) must not answer the program's next request.
 */
import { describe, expect, it } from "@effect/vitest"
import { env, runDurableObjectAlarm } from "cloudflare:test"
import { Effect } from "effect"
import * as ThreadClient from "../../src/ThreadClient.ts"
import { operatorToken, twoApprovalsAgent } from "../worker/threadObject.ts"
import { clientOf, deliverUntil, failureOf, inState, threadName } from "./support.ts"

/** The call position of the approval request a Submission waits on now. */
const openApproval = (client: ReturnType<typeof clientOf>, submissionId: string) =>
  Effect.map(client.explain(submissionId), (explained) => {
    expect(explained.reason._tag).toBe("WaitingForApproval")
    return explained.reason._tag === "WaitingForApproval" ? explained.reason.step : -1
  })

describe("ThreadObject decisions", () => {
  it.live("refuses a repeated decision instead of answering the next approval request", () =>
    Effect.gen(function* () {
      const thread = threadName("decisions")
      const client = clientOf(thread)
      const approvals = client.agent(twoApprovalsAgent)
      const receipt = yield* approvals.submit({ draft: "plan" }, { idempotencyKey: "k" })
      yield* deliverUntil(thread, inState(client, receipt.submissionId, "suspended"))
      const manager = yield* openApproval(client, receipt.submissionId)
      yield* client.resolveApproval(receipt.submissionId, { approved: true, note: "m" }, { step: manager })
      // The program moves on to the finance request.
      yield* deliverUntil(
        thread,
        Effect.map(
          client.explain(receipt.submissionId),
          (explained) => explained.reason._tag === "WaitingForApproval" && explained.reason.step !== manager,
        ),
      )
      const finance = yield* openApproval(client, receipt.submissionId)
      // The manager's decision again (its first answer was lost): refused, finance still waits.
      expect(
        failureOf(
          yield* Effect.exit(
            client.resolveApproval(receipt.submissionId, { approved: true, note: "m" }, { step: manager }),
          ),
        ),
      ).toMatchObject({ _tag: "NotPending", expected: "approval" })
      expect(yield* openApproval(client, receipt.submissionId)).toBe(finance)
      yield* client.resolveApproval(receipt.submissionId, { approved: true, note: "f" }, { step: finance })
      yield* deliverUntil(thread, inState(client, receipt.submissionId, "settled"))
      expect(yield* approvals.awaitSettlement(receipt.submissionId, 1_000)).toMatchObject({
        outcome: "completed",
        output: "plan: m, f",
      })
      // Without a step a decision answers whichever request is open, as before.
      const second = yield* approvals.submit({ draft: "memo" }, { idempotencyKey: "k2" })
      yield* deliverUntil(thread, inState(client, second.submissionId, "suspended"))
      yield* client.resolveApproval(second.submissionId, { approved: false })
      yield* deliverUntil(thread, inState(client, second.submissionId, "settled"))
      expect(yield* client.awaitSettlement(second.submissionId, 1_000)).toMatchObject({
        outcome: "failed",
        error: "approval denied",
      })
    }),
  )

  it.live("leaves a completed Submission's settlement as it is when it is aborted afterwards", () =>
    Effect.gen(function* () {
      const thread = threadName("abort-settled")
      const client = clientOf(thread)
      const done = yield* client.submit({ agentId: "echo", idempotencyKey: "d", input: { text: "x" } })
      yield* deliverUntil(thread, inState(client, done.submissionId, "settled"))
      // beta.96's abort answers void for a settled Submission; the settlement is what tells.
      yield* client.abort(done.submissionId)
      expect(yield* client.awaitSettlement(done.submissionId, 1_000)).toMatchObject({ outcome: "completed" })
    }),
  )

  it.live("refuses a decision whose note is larger than a stored value may be, naming the limit", () =>
    Effect.gen(function* () {
      // An Object of the default limits: a note of 200 KB fits a request (1 MiB), not a record.
      const thread = threadName("large-note")
      const client = ThreadClient.make(env.AUTHORIZED_TEST, thread, {
        caller: { subject: "sam", credential: operatorToken },
      })
      const receipt = yield* client.submit({ agentId: "review", idempotencyKey: "k", input: { draft: "d" } })
      for (let round = 0; round < 60; round++) {
        if ((yield* client.status(receipt.submissionId)).state === "suspended") break
        yield* Effect.promise(() =>
          runDurableObjectAlarm(env.AUTHORIZED_TEST.getByName(thread)).catch(() => false),
        )
        yield* Effect.sleep(5)
      }
      const refused = failureOf(
        yield* Effect.exit(
          client.resolveApproval(receipt.submissionId, { approved: false, note: "n".repeat(200_000) }),
        ),
      )
      expect(refused).toMatchObject({ _tag: "InvalidRequest", entryPoint: "resolveApproval" })
      expect((refused as { message: string }).message).toContain("maxStoredValueBytes")
      expect((yield* client.status(receipt.submissionId)).state).toBe("suspended")
      expect(
        failureOf(
          yield* Effect.exit(
            client.resolveUnknown(receipt.submissionId, { _tag: "Succeeded", value: "v".repeat(200_000) }),
          ),
        ),
      ).toMatchObject({ _tag: "InvalidRequest", entryPoint: "resolveUnknown" })
      yield* client.resolveApproval(receipt.submissionId, { approved: false, note: "too long a draft" })
    }),
  )
})
