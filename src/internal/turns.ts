/**
 * How a `ThreadObject`'s fibers use the event loop's turns. workerd commits an Object's implicit
 * transaction, with an fsync, after every turn that wrote, and holds the answers of its calls
 * until the writes before them are committed. Effect's default scheduler resumes forked and
 * yielding fibers from a timer, in a later turn, so the writes of one pass or call spread over
 * several commits. The Object's scheduler resumes them in a microtask of the same turn, as
 * Effect's `"sync"` mode does, and after a bounded run of such flushes waits for a timer once,
 * so a long pass still lets the isolate's other requests and Objects in. Where an answer is
 * waiting on a write, `endTurn` ends the turn on purpose.
 */
import { Effect, Layer, Scheduler } from "effect"

/** Flushes run in microtasks in a row before one waits for a timer. @internal */
export const FLUSHES_BETWEEN_TURNS = 16

/**
 * @internal A scheduler whose fibers share the turn (and its commit); every run of
 * `FLUSHES_BETWEEN_TURNS` microtask flushes is followed by a flush from a timer.
 */
export const makeObjectScheduler = (): Scheduler.Scheduler => {
  // One count per incarnation: its fibers all dispatch through this scheduler.
  let flushesSinceTurn = 0
  const dispatch = (task: () => void): (() => void) => {
    if (flushesSinceTurn < FLUSHES_BETWEEN_TURNS) {
      flushesSinceTurn += 1
      let cancelled = false
      queueMicrotask(() => {
        if (!cancelled) task()
      })
      return () => {
        cancelled = true
      }
    }
    const timer = setTimeout(() => {
      flushesSinceTurn = 0
      task()
    }, 0)
    return () => clearTimeout(timer)
  }
  return new Scheduler.MixedScheduler("sync", dispatch)
}

/** @internal The incarnation's fibers on `makeObjectScheduler`. */
export const objectSchedulerLayer: Layer.Layer<never> = Layer.sync(Scheduler.Scheduler, makeObjectScheduler)

/**
 * @internal Resumes from a timer, whatever the scheduler: the current turn ends, its writes
 * commit and the answers held behind them go out. Not a clock sleep, so a test clock does not
 * hold it.
 */
export const endTurn: Effect.Effect<void> = Effect.callback<void>((resume) => {
  const timer = setTimeout(() => resume(Effect.void), 0)
  return Effect.sync(() => clearTimeout(timer))
})
