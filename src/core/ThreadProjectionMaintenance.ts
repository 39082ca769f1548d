/**
 * Disposable projections derived from the canonical history (search indexes, read models).
 *
 * Projection backlog never gates canonical execution or publication: the maintenance pass
 * runs at most one due backfill batch per event, under its own timer.
 */
import { Clock, Context, Effect, Layer, Option, Schema } from "effect"
import type { HistoryRecord } from "./ThreadHistory.ts"

/** A failure of a projection hook. */
export class ThreadProjectionError extends Schema.TaggedError<ThreadProjectionError>()(
  "ThreadProjectionError",
  {
    operation: Schema.String,
    message: Schema.String,
    cause: Schema.optionalKey(Schema.Defect()),
  },
) {}

/** Keeps projections of the canonical history up to date. */
export class ThreadProjectionMaintenance extends Context.Service<
  ThreadProjectionMaintenance,
  {
    /** Applies one committed canonical record; failures leave a backfill owed. */
    readonly applyCommitted: (record: HistoryRecord) => Effect.Effect<void, ThreadProjectionError>
    /** Runs one bounded, restartable backfill batch. */
    readonly drain: Effect.Effect<void, ThreadProjectionError>
    /** When the next backfill batch is due, if any (epoch ms). */
    readonly pendingDeadline: Effect.Effect<Option.Option<number>, ThreadProjectionError>
  }
>()("@effect-agent/thread/ThreadProjectionMaintenance") {
  /** No projections: nothing to apply, nothing ever due. */
  static readonly layer = Layer.succeed(this)({
    applyCommitted: () => Effect.void,
    drain: Effect.void,
    pendingDeadline: Effect.succeed(Option.none()),
  })
}

/** Runs one backfill batch when its deadline is due; `true` when it ran. */
export const drainDue: Effect.Effect<boolean, ThreadProjectionError, ThreadProjectionMaintenance> =
  Effect.gen(function* () {
    const projection = yield* ThreadProjectionMaintenance
    const deadline = yield* projection.pendingDeadline
    const now = yield* Clock.currentTimeMillis
    if (Option.isNone(deadline) || deadline.value > now) return false
    yield* projection.drain
    return true
  })
