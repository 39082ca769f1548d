/**
 * Aborts that race a person's decision, and a parent aborted while its child (in another Object)
 * waits for a person: each Submission settles once, a payment runs at most once, and a decision
 * sent after an accepted abort is `NotPending`.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import { managerAgent, payoutAgent, userRuns } from "../worker/userObject.ts"
import { deliverUntil, failureOf, stateIs, uniqueName, userClient } from "./support.ts"

/**
 * A manager's Submission whose payout child waits for approval in an Object of its own
 * (`payouts-<name>`, not the parent's), once the child has parked.
 */
const parkedChild = (name: string, amount: number) =>
  Effect.gen(function* () {
    const parentThread = uniqueName(name)
    const payoutObject = uniqueName(name.replace("manager", "payouts"))
    const parent = userClient(parentThread)
    const child = userClient("payouts", payoutObject)
    const receipt = yield* parent
      .agent(managerAgent)
      .submit({ amount, payoutObject }, { idempotencyKey: "m" })
    yield* deliverUntil(
      [parentThread, payoutObject],
      Effect.map(child.submissions(), (all) => all.some((s) => s.state === "suspended")),
      200,
      "child parked",
    )
    const childId = (yield* child.submissions())[0]!.submissionId
    return { parentThread, payoutObject, parent, child, receipt, childId }
  })

describe("abort races", () => {
  it.live(
    "approve and abort sent together: one settlement, at most one payment, consistent answers",
    () =>
      Effect.gen(function* () {
        const rounds = 6
        yield* Effect.forEach(
          Array.from({ length: rounds }, (_, i) => i),
          (i) =>
            Effect.gen(function* () {
              const thread = uniqueName(`race-${i}`)
              const client = userClient(thread)
              const payouts = client.agent(payoutAgent)
              const receipt = yield* payouts.submit({ amount: 10 + i }, { idempotencyKey: "k" })
              yield* deliverUntil([thread], stateIs(client, receipt.submissionId, "suspended"), 200, "parked")
              const [approve, abort] = yield* Effect.all(
                [
                  Effect.exit(client.resolveApproval(receipt.submissionId, { approved: true })),
                  Effect.exit(client.abort(receipt.submissionId)),
                ],
                { concurrency: 2 },
              )
              // Abort is always accepted (even when settled); the decision may be late.
              expect(Exit.isSuccess(abort)).toBe(true)
              if (Exit.isFailure(approve)) expect(failureOf(approve)?._tag).toBe("NotPending")
              yield* deliverUntil([thread], stateIs(client, receipt.submissionId, "settled"), 200, "settled")
              const settled = yield* client.awaitSettlement(receipt.submissionId, 1_000)
              const paid = userRuns.get(`${receipt.submissionId}:pay`) ?? 0
              expect(paid).toBeLessThanOrEqual(1)
              if (settled.outcome === "completed") expect(paid).toBe(1)
              else expect(settled.outcome).toBe("aborted")
              if (Exit.isFailure(approve)) expect(settled.outcome).toBe("aborted")
              // A decision after the settlement is NotPending.
              const late = yield* Effect.exit(
                client.resolveApproval(receipt.submissionId, { approved: true }),
              )
              expect(failureOf(late)?._tag).toBe("NotPending")
              expect((yield* client.verify).violations).toEqual([])
            }),
          { concurrency: 3 },
        )
      }),
    60_000,
  )

  it.live(
    "aborting a parent while its child waits in another Object aborts the child; nothing is paid",
    () =>
      Effect.gen(function* () {
        const { parentThread, payoutObject, parent, child, receipt, childId } = yield* parkedChild(
          "manager",
          99,
        )
        yield* parent.abort(receipt.submissionId)
        yield* deliverUntil(
          [parentThread, payoutObject],
          Effect.zipWith(
            stateIs(parent, receipt.submissionId, "settled"),
            stateIs(child, childId, "settled"),
            (a, b) => a && b,
          ),
          200,
          "both settled",
        )
        expect((yield* parent.awaitSettlement(receipt.submissionId, 1_000)).outcome).toBe("aborted")
        expect((yield* child.awaitSettlement(childId, 1_000)).outcome).toBe("aborted")
        const late = yield* Effect.exit(child.resolveApproval(childId, { approved: true }))
        expect(failureOf(late)?._tag).toBe("NotPending")
        expect(userRuns.get(`${childId}:pay`)).toBeUndefined()
        expect(userRuns.get(`${receipt.submissionId}:after-child`)).toBeUndefined()
        expect((yield* parent.verify).violations).toEqual([])
        expect((yield* child.verify).violations).toEqual([])
      }),
    30_000,
  )

  it.live(
    "the child approved while its parent is aborted: each settles once, the payment at most once",
    () =>
      Effect.gen(function* () {
        const { parentThread, payoutObject, parent, child, receipt, childId } = yield* parkedChild(
          "manager-race",
          7,
        )
        yield* Effect.all(
          [
            Effect.exit(child.resolveApproval(childId, { approved: true })),
            parent.abort(receipt.submissionId),
          ],
          { concurrency: 2 },
        )
        yield* deliverUntil(
          [parentThread, payoutObject],
          Effect.zipWith(
            stateIs(parent, receipt.submissionId, "settled"),
            stateIs(child, childId, "settled"),
            (a, b) => a && b,
          ),
          200,
          "both settled",
        )
        expect((yield* parent.awaitSettlement(receipt.submissionId, 1_000)).outcome).toBe("aborted")
        const childSettled = yield* child.awaitSettlement(childId, 1_000)
        const paid = userRuns.get(`${childId}:pay`) ?? 0
        expect(paid).toBeLessThanOrEqual(1)
        if (childSettled.outcome === "completed") expect(paid).toBe(1)
        expect(userRuns.get(`${receipt.submissionId}:after-child`)).toBeUndefined()
        expect((yield* parent.verify).violations).toEqual([])
        expect((yield* child.verify).violations).toEqual([])
      }),
    30_000,
  )
})
