/**
 * The lane seek of the actionable path over both ledgers: it honours the durable cursor, wraps
 * around, passes over heads in binding waits, never reads a head parked in a stable wait,
 * agrees with the pure rotation (`selectLane`), and reads heads only up to the first runnable
 * lane.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { ThreadId } from "../../src/core/Identifiers.ts"
import { SubmissionLedger, type SubmissionSnapshot } from "../../src/core/SubmissionLedger.ts"
import { selectLane } from "./laneModel.ts"
import { seekLane, visitLanes } from "../../src/internal/maintenance/select.ts"
import { BindingRetry } from "../../src/internal/maintenance/state.ts"
import {
  admitReady,
  claimHead,
  grant,
  request,
  type LedgerHarness,
} from "../core/SubmissionLedgerFixtures.ts"
import { memoryHarness, sqlHarness } from "../core/SubmissionLedgerHarness.ts"

const noReports = new Map()
const now = 10_000

/** Lanes "a" … "e" with one or two queued rows; "c" parks its head in an approval wait. */
const fiveLanes = Effect.gen(function* () {
  const ledger = yield* SubmissionLedger
  const heads = new Map<string, SubmissionSnapshot>()
  for (const lane of ["a", "b", "c", "d", "e"]) {
    heads.set(lane, yield* admitReady(request(lane, "1")))
    yield* admitReady(request(lane, "2"))
  }
  yield* ledger.park(yield* claimHead("c", grant(1, 2_000)), "suspended")
  return heads
})

const waitOn = (head: SubmissionSnapshot, notBefore: number) =>
  BindingRetry.make({
    threadId: head.threadId,
    submissionId: head.submissionId,
    attempts: 1,
    notBefore,
    reportedAt: 0,
  })

const seek = (cursor: string | undefined, bindingRetries: ReadonlyArray<BindingRetry> = []) =>
  Effect.gen(function* () {
    const ledger = yield* SubmissionLedger
    const { selected, visited } = yield* seekLane(
      ledger,
      noReports,
      { cursor: cursor === undefined ? undefined : ThreadId.make(cursor), bindingRetries },
      now,
    )
    return { selected: selected?.threadId, visited: visited.map((head) => head.threadId) }
  })

const cases = (name: string, harness: LedgerHarness) =>
  describe(`lane seek (${name})`, () => {
    it.effect("serves the first runnable lane after the cursor, wrapping around", () =>
      harness.run(
        Effect.gen(function* () {
          yield* fiveLanes
          expect(yield* seek(undefined)).toEqual({ selected: "a", visited: [] })
          expect(yield* seek("a")).toEqual({ selected: "b", visited: [] })
          // "c" is parked in a stable wait: its lane is skipped without reading its head.
          expect(yield* seek("b")).toEqual({ selected: "d", visited: [] })
          expect(yield* seek("e")).toEqual({ selected: "a", visited: [] })
          // A cursor naming a lane that no longer exists seeks from its place in the order.
          expect(yield* seek("bb")).toEqual({ selected: "d", visited: [] })
          expect(yield* seek("z")).toEqual({ selected: "a", visited: [] })
        }),
      ),
    )

    it.effect("passes over heads in binding waits until they are due, and serves the cursor lane last", () =>
      harness.run(
        Effect.gen(function* () {
          const heads = yield* fiveLanes
          const head = (lane: string) => heads.get(lane)!
          const waits = [waitOn(head("d"), now + 1), waitOn(head("e"), now + 5), waitOn(head("a"), now + 1)]
          expect(yield* seek("b", waits)).toEqual({ selected: "b", visited: ["d", "e", "a"] })
          // A due wait does not hold its lane; a wait on another Submission does not either.
          expect(yield* seek("b", [waitOn(head("d"), now)])).toEqual({ selected: "d", visited: [] })
          const b = head("b")
          expect(yield* seek("b", [...waits, waitOn(b, now + 1)])).toEqual({
            selected: undefined,
            visited: ["d", "e", "a", "b"],
          })
        }),
      ),
    )

    it.effect("agrees with the pure rotation over every cursor", () =>
      harness.run(
        Effect.gen(function* () {
          const heads = yield* fiveLanes
          const waits = [waitOn(heads.get("e")!, now + 1)]
          const eligible = ["a", "b", "d", "e"].map((lane) => ThreadId.make(lane))
          for (const cursor of [undefined, "a", "b", "c", "d", "e", "f"]) {
            const expected = selectLane(
              eligible,
              cursor === undefined ? undefined : ThreadId.make(cursor),
              waits,
              now,
            )
            expect((yield* seek(cursor, waits)).selected).toEqual(expected)
          }
        }),
      ),
    )

    it.effect("visits every lane once from an inclusive start, and none without lanes", () =>
      harness.run(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          const none: Array<string> = []
          expect(yield* visitLanes(ledger, undefined, (head) => none.push(head.threadId) < 0)).toBe(false)
          expect(none).toEqual([])
          yield* fiveLanes
          const order: Array<string> = []
          const stopped = yield* visitLanes(
            ledger,
            { threadId: ThreadId.make("c"), inclusive: true },
            (head) => {
              order.push(head.threadId)
              return false
            },
          )
          expect(stopped).toBe(false)
          expect(order).toEqual(["c", "d", "e", "a", "b"])
          const first: Array<string> = []
          expect(
            yield* visitLanes(ledger, { threadId: ThreadId.make("d"), inclusive: true }, (head) => {
              first.push(head.threadId)
              return head.threadId === "a"
            }),
          ).toBe(true)
          expect(first).toEqual(["d", "e", "a"])
          expect(Option.isSome(yield* ledger.nextLaneHead(undefined))).toBe(true)
        }),
      ),
    )
  })

cases("memory", memoryHarness)
cases("SQLite", sqlHarness)
