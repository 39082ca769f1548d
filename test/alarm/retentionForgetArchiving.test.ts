/**
 * `forget` of a Submission the archive is storing now: the archive's copy would land after the
 * erasure was answered, so `forget` is refused (`still-needed`) until the archive ended; then the
 * Submission is gone (retention removed it) and the caller knows to erase the archive's copy.
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Option } from "effect"
import { TestClock } from "effect/testing"
import type { ArchivedSubmission } from "../../src/core/Retention.ts"
import { objectCalls } from "../../src/internal/object/handlers.ts"
import { echo } from "../core/runtimeAgents.ts"
import { incarnation } from "../support/incarnation.ts"
import { dayAhead, inObject, objectName } from "./harness.ts"

const entry = objectCalls(undefined)

describe("forget while the archive stores the Submission", () => {
  it.effect("is refused until the archive ended, so no copy lands after an erasure", () =>
    inObject(objectName("retention-forget-archiving"), (ctx) =>
      Effect.gen(function* () {
        const start = yield* dayAhead
        const started = yield* Deferred.make<void>()
        const release = yield* Deferred.make<void>()
        const stored: Array<ArchivedSubmission> = []
        const inc = yield* incarnation(ctx, {
          agents: [echo],
          config: { retention: { settledForMillis: 60_000, windowMillis: 10_000 } },
          archive: {
            archive: (batch) =>
              Effect.gen(function* () {
                yield* Deferred.succeed(started, undefined)
                yield* Deferred.await(release)
                stored.push(...batch)
              }),
          },
        })
        const receipt = yield* entry
          .submit({ threadId: "lane", agentId: "echo", idempotencyKey: "a", input: { text: "secret" } })
          .pipe(Effect.provideContext(inc.context))
        for (let round = 0; round < 20 && (yield* inc.ledger.countAllNonterminal) > 0; round++)
          yield* inc.maintenance.pass
        yield* TestClock.setTime(Math.ceil((start + 60_000) / 10_000) * 10_000)
        const pass = yield* Effect.forkChild(inc.maintenance.pass)
        yield* Deferred.await(started)

        const forget = entry
          .forget({ threadId: receipt.threadId, submissionId: receipt.submissionId })
          .pipe(Effect.provideContext(inc.context))
        expect(yield* Effect.flip(forget)).toMatchObject({
          _tag: "ForgetRefused",
          submissionId: receipt.submissionId,
          reason: "still-needed",
        })
        expect(Option.isSome(yield* inc.ledger.lookup(receipt.submissionId))).toBe(true)

        yield* Deferred.succeed(release, undefined)
        yield* Fiber.join(pass)
        // The archive holds it, retention removed it, and forget now answers as for a removed id.
        expect(stored.map((archived) => archived.submission.submissionId)).toEqual([receipt.submissionId])
        expect(yield* inc.ledger.lookup(receipt.submissionId)).toEqual(Option.none())
        yield* forget
      }),
    ),
  )
})
