/**
 * The SQLite ledger's shortcut for an Object with no timed wait (its due reads run no statement
 * once one found none) against a timed wait stored while such a read is in flight: a pass reads
 * the earliest due wait while a submit with `notBefore` runs beside it (mutations run outside the
 * gate's permit), and a fiber may yield between a statement and its continuation. The wait stored
 * meanwhile is still found by the next reads, so its alarm is not lost.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Option } from "effect"
import { SubmissionLedger } from "../../src/core/SubmissionLedger.ts"
import { layerWithLedger } from "../../src/core/ThreadHistory.ts"
import { statements } from "../../src/core/internal/ledger/sqlStatements.ts"
import { grant, owner, request, settlementOf } from "./SubmissionLedgerFixtures.ts"
import { holdAfter } from "./heldStatement.ts"
import { inObject } from "./SubmissionLedgerHarness.ts"

describe("SQLite timed waits read while one is stored", () => {
  it.effect(
    "a delayed Submission admitted while a read of the earliest due wait is in flight stays due",
    () =>
      inObject((storage) =>
        Effect.gen(function* () {
          const held = yield* holdAfter(storage, statements.earliestDue(1), { armed: true })
          const sql = held.sql
          yield* Effect.gen(function* () {
            const ledger = yield* SubmissionLedger
            // A delayed Submission admitted, claimed when due and settled: the ledger no longer
            // knows that no timed wait is stored, so the next read runs its statement.
            const first = yield* ledger.admit(request("first", "k", { notBefore: 2_000 }))
            if (first._tag !== "Admitted") return expect.fail("not admitted")
            const claim = Option.getOrThrow(
              yield* ledger.claimDue(first.snapshot.submissionId, grant(1, 3_000)),
            )
            yield* ledger.settle(owner(claim), settlementOf(claim))
            const read = yield* Effect.forkChild(ledger.earliestDue(1))
            yield* held.reached
            const admission = yield* ledger.admit(request("later", "k", { notBefore: 50_000 }))
            expect(admission._tag).toBe("Admitted")
            yield* held.release
            // The read in flight may answer either way; the ones after it see the wait.
            yield* Fiber.join(read)
            expect((yield* ledger.earliestDue(1)).map((row) => row.dueAt)).toEqual([50_000])
            expect((yield* ledger.nextDue(60_000, { limit: 10 })).map((row) => row.threadId)).toEqual([
              "later",
            ])
          }).pipe(Effect.provide(layerWithLedger.pipe(Layer.provide(sql))))
        }),
      ),
  )
})
