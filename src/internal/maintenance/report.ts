/** The outcome of one maintenance event. */
import { Effect, Schema } from "effect"

const Count = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))

/** What one maintenance pass did, annotated on its span as well. */
export class MaintenancePassReport extends Schema.Class<MaintenancePassReport>(
  "@effect-agent/platform-cloudflare/MaintenancePassReport",
)({
  /** `caught-up`: no runtime work ran; `actionable`: recovery ran. */
  phase: Schema.Literals(["caught-up", "actionable"]),
  /**
   * Recovery reports produced before the head Attempt: the Submissions recovery looked at.
   * Plain queued input is decided by its state and has none; 0 when caught up.
   */
  recovered: Count,
  /**
   * How many Attempts of this event settled their Submission: lane heads and due timed waits,
   * up to `maxHeadsPerEvent` heads and `maxTimersPerEvent` waits; 0 when caught up.
   */
  settled: Count,
  /** Nonterminal Submissions after the pass (caught up: the recorded count). */
  nonterminal: Count,
  /** Final disposition of the alarm slot. */
  alarm: Schema.Literals(["rearmed", "cleared"]),
}) {}

/** @internal Annotates the current span with the report keys. */
export const annotateReport = (report: MaintenancePassReport): Effect.Effect<MaintenancePassReport> =>
  Effect.as(
    Effect.annotateCurrentSpan({
      phase: report.phase,
      recovered: report.recovered,
      settled: report.settled,
      nonterminal: report.nonterminal,
      alarm: report.alarm,
    }),
    report,
  )
