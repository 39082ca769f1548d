import { describe, expect, it } from "@effect/vitest"
import { Schema } from "effect"
import { SubmissionId, ThreadId } from "../../src/core/Identifiers.ts"
import { selectLane } from "./laneModel.ts"
import { BindingRetry } from "../../src/internal/maintenance/state.ts"

const Lanes = Schema.Array(ThreadId).check(Schema.isMinLength(1), Schema.isMaxLength(12))

/** Eligible lanes as the pass builds them: distinct and in ascending (UTF-16) order. */
const eligibleOf = (lanes: ReadonlyArray<ThreadId>) => [...new Set(lanes)].sort()

const waitFor = (threadId: ThreadId, notBefore: number) =>
  BindingRetry.make({
    threadId,
    submissionId: SubmissionId.make(`head-of-${threadId}`),
    attempts: 1,
    notBefore,
    reportedAt: 0,
  })

/** `count` consecutive selections, each persisting its lane as the next cursor. */
const rotate = (
  eligible: ReadonlyArray<ThreadId>,
  cursor: ThreadId | undefined,
  count: number,
  waits: ReadonlyArray<BindingRetry> = [],
) => {
  const served: Array<ThreadId | undefined> = []
  let current = cursor
  for (let i = 0; i < count; i++) {
    const next = selectLane(eligible, current, waits, 1_000)
    served.push(next)
    current = next ?? current
  }
  return served
}

describe("selectLane", () => {
  it.prop(
    "serves every eligible lane within |lanes| consecutive selections",
    { lanes: Lanes, cursor: Schema.UndefinedOr(ThreadId) },
    ({ lanes, cursor }) => {
      const eligible = eligibleOf(lanes)
      const served = rotate(eligible, cursor, eligible.length)
      expect([...served].sort()).toEqual(eligible)
    },
  )

  it.prop(
    "picks the first lane after the cursor and wraps to the smallest",
    { lanes: Lanes, cursor: ThreadId },
    ({ lanes, cursor }) => {
      const eligible = eligibleOf(lanes)
      const after = eligible.filter((lane) => lane > cursor)
      expect(selectLane(eligible, cursor, [], 0)).toBe(after[0] ?? eligible[0])
    },
  )

  it.prop(
    "skips lanes whose binding wait is not yet due and serves the others fairly",
    { lanes: Lanes, waiting: Schema.Array(Schema.Boolean), cursor: Schema.UndefinedOr(ThreadId) },
    ({ lanes, waiting, cursor }) => {
      const eligible = eligibleOf(lanes)
      const waits = eligible.flatMap((lane, index) =>
        waiting[index] === true ? [waitFor(lane, 1_001)] : [waitFor(lane, 1_000)],
      )
      const runnable = eligible.filter((_, index) => waiting[index] !== true)
      const served = rotate(eligible, cursor, Math.max(1, runnable.length), waits)
      if (runnable.length === 0) {
        expect(served).toEqual([undefined])
      } else {
        expect([...served].sort()).toEqual(runnable)
      }
    },
  )

  it("orders lanes by UTF-16 code units and starts at the smallest without a cursor", () => {
    const eligible = eligibleOf(["b", "a", "é", "Z", "😀"].map((id) => ThreadId.make(id)))
    expect(eligible).toEqual(["Z", "a", "b", "é", "😀"])
    expect(rotate(eligible, undefined, 6)).toEqual(["Z", "a", "b", "é", "😀", "Z"])
  })

  it("ignores a wait that is already due and selects nothing when no lane is eligible", () => {
    const lane = ThreadId.make("lane")
    expect(selectLane([lane], undefined, [waitFor(lane, 1_000)], 1_000)).toBe(lane)
    expect(selectLane([lane], undefined, [waitFor(lane, 1_001)], 1_000)).toBeUndefined()
    expect(selectLane([], lane, [], 1_000)).toBeUndefined()
  })
})
