/**
 * Authorization of privileged entry points: an application check over the caller and the
 * target runs before anything is written, and a refusal is a typed `Unauthorized`.
 */
import { describe, expect, it } from "@effect/vitest"
import { env, runDurableObjectAlarm } from "cloudflare:test"
import { Effect } from "effect"
import * as ThreadClient from "../../src/ThreadClient.ts"
import { operatorToken } from "../worker/threadObject.ts"
import { failureOf, storedEverything, threadName } from "./support.ts"

const clientAs = (thread: string, caller?: { subject: string; credential?: string }) =>
  ThreadClient.make(env.AUTHORIZED_TEST, thread, caller === undefined ? {} : { caller })

const stored = (thread: string) => storedEverything(env.AUTHORIZED_TEST.getByName(thread))

describe("ThreadObject authorization", () => {
  it.live(
    "refuses privileged calls without a valid credential, writing nothing, and allows the operator",
    () =>
      Effect.gen(function* () {
        const thread = threadName("authorized")
        const anonymous = clientAs(thread)
        const intruder = clientAs(thread, { subject: "mallory", credential: "guess" })
        const operator = clientAs(thread, { subject: "sam", credential: operatorToken })
        // Submitting and reading are not privileged.
        const receipt = yield* anonymous.submit({
          agentId: "review",
          idempotencyKey: "k",
          input: { draft: "x" },
        })
        // Let it park in its approval wait, so no pass runs while the refusals are checked.
        for (let round = 0; round < 60; round++) {
          const { alarm, kv } = yield* stored(thread)
          const record = kv.find(([key]) => key === "effect-agent:thread-maintenance:v1")?.[1] as
            { dirty: string; processed: string } | undefined
          if (alarm === null && record !== undefined && record.dirty === record.processed) break
          yield* Effect.promise(() =>
            runDurableObjectAlarm(env.AUTHORIZED_TEST.getByName(thread)).catch(() => false),
          )
          yield* Effect.sleep(5)
        }
        expect((yield* anonymous.status(receipt.submissionId)).state).toBe("suspended")
        const before = yield* stored(thread)
        const attempts = [
          ["abort", anonymous.abort(receipt.submissionId)],
          ["abort", intruder.abort(receipt.submissionId)],
          ["retry", intruder.retry(receipt.submissionId)],
          ["resolveApproval", intruder.resolveApproval(receipt.submissionId, { approved: true })],
          ["resolveUnknown", intruder.resolveUnknown(receipt.submissionId, { _tag: "Succeeded", value: 1 })],
          ["repairMaintenance", intruder.repairMaintenance],
        ] as const
        for (const [entryPoint, call] of attempts) {
          const failure = failureOf(yield* Effect.exit(call))
          expect(failure).toMatchObject({ _tag: "Unauthorized", entryPoint })
        }
        expect(failureOf(yield* Effect.exit(anonymous.abort(receipt.submissionId)))).toMatchObject({
          message: "no caller identity",
        })
        expect(yield* stored(thread)).toEqual(before)
        yield* anonymous.explain(receipt.submissionId)

        yield* operator.abort(receipt.submissionId)
        expect((yield* operator.status(receipt.submissionId)).abortRequested).toBe(true)
        expect(yield* operator.repairMaintenance).toMatchObject({ repaired: false })
      }),
  )
})
