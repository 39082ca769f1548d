/** Conformance cases: a child's link to its parent, joins into a host, and input records. */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { IdempotencyKey, SubmissionId, ThreadId } from "../../src/core/Identifiers.ts"
import { Settlement, SubmissionLedger } from "../../src/core/SubmissionLedger.ts"
import { ThreadHistory } from "../../src/core/ThreadHistory.ts"
import {
  admitNew,
  admitReady,
  claimHead,
  grant,
  owner,
  request,
  rowOf,
  scanAll,
  settlementOf,
  unowned,
  type LedgerHarness,
} from "./SubmissionLedgerFixtures.ts"

const parent = {
  address: { namespace: "THREADS", objectId: "a".repeat(64) },
  threadId: ThreadId.make("parent-thread"),
  submissionId: SubmissionId.make("parent-1"),
  step: 4,
}

/** Registers the link, join and input-fence cases. */
export const linkCases = (harness: LedgerHarness) => {
  describe("links and joins", () => {
    it.effect("stores a child's parent link with its admission and finds the child by its key", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          const child = yield* admitNew(request("child", "parent:parent-1:4", { parent }))
          expect(child.parent).toEqual(parent)
          expect((yield* rowOf(child.submissionId)).parent).toEqual(parent)
          const found = yield* ledger.lookupByKey(
            ThreadId.make("child"),
            IdempotencyKey.make("parent:parent-1:4"),
          )
          expect(Option.getOrThrow(found)).toEqual(child)
          expect(
            yield* ledger.lookupByKey(ThreadId.make("other"), IdempotencyKey.make("parent:parent-1:4")),
          ).toEqual(Option.none())
          const plain = yield* admitNew(request("child", "k"))
          expect(plain.parent).toBeUndefined()
        }),
      ),
    )

    it.effect("claims a join, marks it joined and lists the joins of a host in queue order", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          const host = yield* admitReady(request("t", "host"))
          const other = yield* admitReady(request("t", "other"))
          const first = yield* admitNew(request("t", "j1"))
          const second = yield* admitNew(request("t", "j2"))
          const joining = yield* ledger.claimJoining(first.submissionId, host.submissionId)
          expect([joining.state, joining.host]).toEqual(["joining", host.submissionId])
          // A repeat for the same host changes nothing; another host is refused.
          expect(yield* ledger.claimJoining(first.submissionId, host.submissionId)).toEqual(joining)
          const refused = yield* Effect.flip(ledger.claimJoining(first.submissionId, other.submissionId))
          expect(refused._tag).toBe("InvalidTransition")
          yield* ledger.claimJoining(second.submissionId, host.submissionId)
          const joined = yield* ledger.markJoined(first.submissionId)
          expect(joined.state).toBe("joined")
          expect(yield* ledger.markJoined(first.submissionId)).toEqual(joined)
          const joins = yield* ledger.joinsOf(ThreadId.make("t"), host.submissionId)
          expect(joins.map((row) => [row.submissionId, row.state])).toEqual([
            [first.submissionId, "joined"],
            [second.submissionId, "joining"],
          ])
          expect(yield* ledger.joinsOf(ThreadId.make("t"), other.submissionId)).toEqual([])
          // A join is never claimed: the lane's head stays the host.
          const claim = yield* claimHead("t", grant(1, 2_000))
          expect(claim.submissionId).toBe(host.submissionId)
        }),
      ),
    )

    it.effect(
      "keeps a join's host from its admission, and drops it when the row becomes ordinary input",
      () =>
        harness.run(
          Effect.gen(function* () {
            const ledger = yield* SubmissionLedger
            const host = yield* admitReady(request("t", "host"))
            const join = yield* admitNew(request("t", "j", { host: host.submissionId }))
            expect([join.state, join.host]).toEqual(["admitted", host.submissionId])
            const ready = yield* ledger.markReady(join.submissionId, 2_000)
            expect([ready.state, ready.host]).toEqual(["ready", undefined])
            expect(yield* rowOf(join.submissionId)).toEqual(ready)
          }),
        ),
    )

    it.effect("reverts a join to ordinary queued input that claims like any other", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          const host = yield* admitReady(request("t", "host"))
          const join = yield* admitNew(request("t", "j"))
          yield* ledger.claimJoining(join.submissionId, host.submissionId)
          const reverted = yield* ledger.revertJoining(join.submissionId, 3_000)
          expect(reverted).toMatchObject({ state: "ready", readyAt: 3_000 })
          expect(reverted.host).toBeUndefined()
          expect(yield* ledger.revertJoining(join.submissionId, 4_000)).toEqual(reverted)
          expect((yield* Effect.flip(ledger.markJoined(join.submissionId)))._tag).toBe("InvalidTransition")
          const hostClaim = yield* claimHead("t", grant(1, 3_100))
          yield* ledger.reserveSettlement(owner(hostClaim), settlementOf(hostClaim))
          yield* ledger.finalizeSettlement(hostClaim.submissionId)
          const claim = yield* claimHead("t", grant(2, 3_200))
          expect(claim.submissionId).toBe(join.submissionId)
          expect(yield* ledger.joinsOf(ThreadId.make("t"), host.submissionId)).toEqual([])
        }),
      ),
    )

    it.effect("settles a joined submission with its host's settlement naming the host", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          const host = yield* admitReady(request("t", "host"))
          const join = yield* admitNew(request("t", "j"))
          yield* ledger.claimJoining(join.submissionId, host.submissionId)
          const joined = yield* ledger.markJoined(join.submissionId)
          const settlement = settlementOf(joined)
          const reserved = yield* ledger.reserveSettlement(
            unowned(joined, 5_000),
            new Settlement({ ...settlement, host: host.submissionId }),
          )
          expect(reserved.settlement?.host).toBe(host.submissionId)
          const final = yield* ledger.finalizeSettlement(join.submissionId)
          expect(final.state).toBe("settled")
          expect((yield* scanAll).map((row) => row.submissionId)).toEqual([host.submissionId])
        }),
      ),
    )

    it.effect("accepts input records while a submission runs and refuses them once it settles", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          const history = yield* ThreadHistory
          const row = yield* admitReady(request("t", "a"))
          const claim = yield* claimHead("t", grant(1, 2_000))
          const input = { _tag: "Input", submissionId: row.submissionId } as const
          // A live owner holds the row: an input record still lands, an unowned one does not.
          const record = yield* history.append(row.submissionId, { _tag: "AbortRequested" }, input, 2_100)
          expect(record.submissionId).toBe(row.submissionId)
          expect(
            (yield* Effect.flip(ledger.checkFence(unowned(yield* rowOf(row.submissionId), 2_100))))._tag,
          ).toBe("FenceRejected")
          yield* ledger.reserveSettlement(owner(claim), settlementOf(claim))
          const late = yield* Effect.flip(
            history.append(row.submissionId, { _tag: "AbortRequested" }, input, 2_200),
          )
          expect(late).toMatchObject({ _tag: "FenceRejected" })
          expect(late.message).toContain("takes no more input")
          const missing = yield* Effect.flip(
            ledger.checkFence({ _tag: "Input", submissionId: SubmissionId.make("nobody") }),
          )
          expect(missing._tag).toBe("SubmissionNotFound")
        }),
      ),
    )
  })
}
