/**
 * How a `ThreadObject`'s fibers use the event loop's turns. workerd commits an Object's implicit
 * transaction, with an fsync, after every turn that wrote, and holds the answers of its calls
 * until the writes before them are committed. Effect's default scheduler resumes forked and
 * yielding fibers in a later turn (`setImmediate`, or a timer), so the writes of one pass or call
 * spread over several commits. The Object's scheduler resumes them in a microtask of the same
 * turn, as Effect's `"sync"` mode does, but sends a turn's 17th flush to a timer, so a long pass
 * still lets the isolate's other requests and Objects in. Where a caller's answer waits on a
 * write, `endTurn` ends the turn on purpose.
 */
import { Effect, Layer, Scheduler } from "effect"

/** Flushes a turn runs in microtasks; the next one waits for a timer. @internal */
export const FLUSHES_PER_TURN = 16

/**
 * Runs up to `FLUSHES_PER_TURN` flushes per turn in microtasks and a further one from a timer.
 * The count is of one scheduler's dispatches, and a timer armed by a turn's first clears it
 * once that turn is over, however it ended.
 */
const turnSharing = () => {
  let flushesThisTurn = 0
  return (task: () => void): (() => void) => {
    if (flushesThisTurn < FLUSHES_PER_TURN) {
      if (flushesThisTurn === 0) setTimeout(() => (flushesThisTurn = 0), 0)
      flushesThisTurn += 1
      let cancelled = false
      queueMicrotask(() => {
        if (!cancelled) task()
      })
      return () => {
        cancelled = true
      }
    }
    const timer = setTimeout(task, 0)
    return () => clearTimeout(timer)
  }
}

/** @internal A scheduler whose fibers share the turn, and so its commit, with bounded fairness. */
export class ObjectScheduler extends Scheduler.MixedScheduler {
  constructor() {
    super("sync", turnSharing())
  }
}

/** @internal The incarnation's fibers on an `ObjectScheduler` of its own. */
export const objectSchedulerLayer: Layer.Layer<never> = Layer.sync(
  Scheduler.Scheduler,
  () => new ObjectScheduler(),
)

/**
 * @internal Resumes from a timer, whatever the scheduler: the current turn ends, its writes
 * commit and the answers held behind them go out. Not a clock sleep, so a test clock does not
 * hold it.
 */
export const endTurn: Effect.Effect<void> = Effect.callback<void>((resume) => {
  const timer = setTimeout(() => resume(Effect.void), 0)
  return Effect.sync(() => clearTimeout(timer))
})

/**
 * @internal Ends the turn, so that its writes commit, where the fiber runs on an Object's
 * scheduler (a `ThreadObject`); elsewhere (another scheduler, the simulation's) a no-op.
 */
export const commitTurn: Effect.Effect<void> = Effect.withFiber((fiber) =>
  fiber.getRef(Scheduler.Scheduler) instanceof ObjectScheduler ? endTurn : Effect.void,
)
