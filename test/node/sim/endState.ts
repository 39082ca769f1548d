/**
 * The end of a run: the Object is quiescent (no alarm, nothing owed) and every accepted
 * Submission settled exactly once, with the outcome its input and recorded resolutions imply.
 */
import { expectedOutcome } from "./agents.ts"
import { readRecord } from "./invariants.ts"
import type { World } from "./world.ts"

/** Checks the quiescent end state; `label` names Submissions in messages. */
export const checkEndState = (world: World, label: (submissionId: string) => string) => {
  const { check } = world.monitor
  const record = readRecord(world.storage)
  check(
    "end-quiescent",
    world.storage.alarm === null,
    () => `the alarm is ${world.storage.alarm} at quiescence`,
  )
  check(
    "end-quiescent",
    record === undefined || record.dirty === record.processed,
    () => `generation ${record?.dirty}/${record?.processed} at quiescence`,
  )
  world.monitor.schedules.end()
  for (const row of world.store.rows.values()) {
    const name = `${label(row.submissionId)} (${row.agentId}@${row.threadId})`
    check("end-settled", row.state === "settled", () => `${name} never settled: ${row.state}`)
    const entries = (world.store.historyBySubmission.get(row.submissionId) ?? []).map(
      (record) => record.entry,
    )
    const recorded = entries.filter((entry) => entry._tag === "SubmissionSettled")
    check(
      "end-settled",
      recorded.length === 1 &&
        recorded[0]?._tag === "SubmissionSettled" &&
        recorded[0].outcome === row.settlement?.outcome,
      () => `${name} has ${recorded.length} settlement records for ledger outcome ${row.settlement?.outcome}`,
    )
    const settlement = row.settlement
    if (settlement === undefined) continue
    const host = settlement.host === undefined ? undefined : world.store.rows.get(settlement.host)?.settlement
    if (settlement.host !== undefined) {
      // A joined Submission settles with its host: the same outcome and output.
      check(
        "end-outcome",
        host !== undefined &&
          host.outcome === settlement.outcome &&
          JSON.stringify(host.output) === JSON.stringify(settlement.output),
        () => `${name} settled ${JSON.stringify(settlement)}, but its host ${JSON.stringify(host)}`,
      )
      continue
    }
    if (settlement.outcome === "aborted") {
      check("end-outcome", row.abortRequested, () => `${name} settled aborted without an abort request`)
      continue
    }
    const expected = expectedOutcome(row.agentId, JSON.parse(row.inputPayload) as unknown, entries)
    check(
      "end-outcome",
      expected.outcome === settlement.outcome &&
        (expected.outcome !== "completed" ||
          JSON.stringify(expected.output) === JSON.stringify(settlement.output)),
      () => `${name} settled ${JSON.stringify(settlement)}, expected ${JSON.stringify(expected)}`,
    )
  }
}
