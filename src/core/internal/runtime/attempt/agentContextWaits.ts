/**
 * The timed calls of an `AgentContext`: `sleep`, `sleepUntil` and the step with a retry policy
 * or a timeout. A wait never sleeps in a fiber: the Attempt ends in a timed park (`waiting`
 * until the due time) and a later Attempt, claimed in place when the row is due, replays to the
 * call. The start of a wait lives in the row (`wait`, `dueAt`), its end in the journal
 * (`TimerFired`, `StepAttemptFailed`).
 *
 * Replay of a wait at call position `k` reads the row's last wait: positions only grow, so a
 * wait recorded at a later position means this one ended; a wait at `k` whose due time has
 * come ends now; one woken before its time parks again with the same due time.
 */
import { Clock, Duration, Effect, Option, Result } from "effect"
import type { StepOptions, StepRunOptions } from "../../../AgentContext.ts"
import { AgentFailure, type JsonCodec } from "../../../AgentRegistration.ts"
import type { HistoryEntry } from "../../history/model.ts"
import type { WaitRecord } from "../../ledger/model.ts"
import type { JournalPosition } from "../shared/journal.ts"
import { boundary, halt, journalMismatch, takeStaged } from "./attemptState.ts"
import type { ContextCalls } from "./contextCalls.ts"
import { type FailedAttempt, isRetryable, nextDelay, prepareRetry, timeoutProblem } from "./retry.ts"

/** The call position a wait record belongs to, when it has one. */
const stepOf = (wait: WaitRecord | undefined): number | undefined =>
  wait === undefined || wait._tag === "Delayed" || wait._tag === "Workflow" ? undefined : wait.step

/** Builds the timed calls over what the context's calls share. @internal */
export const makeWaitCalls = (calls: ContextCalls) => {
  const { attempt, append, hit, recorded, next, wait } = calls

  /** Records owed with the next record: a fired timer is evidence, not state. */
  const stage = (entry: HistoryEntry) =>
    Effect.sync(() => {
      attempt.staged = [...attempt.staged, entry]
    })

  const sleepAt = (name: string, target: (now: number) => number): Effect.Effect<void> =>
    Effect.gen(function* () {
      const position = next()
      const found = yield* recorded(position, "sleep", name)
      if (found?.timerFired !== undefined) return
      const waitStep = stepOf(wait)
      // A later call parked since: this sleep ended before it.
      if (waitStep !== undefined && waitStep > position) return
      const now = yield* Clock.currentTimeMillis
      if (waitStep === position) {
        if (wait?._tag !== "Sleep" || wait.name !== name) {
          return yield* journalMismatch(
            attempt,
            `call ${position} parked as ${wait?._tag ?? "a wait"}, but the program asked for sleep "${name}"`,
          )
        }
        if (wait.dueAt <= now)
          return yield* stage({ _tag: "TimerFired", step: position, name, dueAt: wait.dueAt })
        // Woken before its time: the same due time, never a later or an earlier one.
        return yield* halt(attempt, { _tag: "Wait", park: { wait, dueAt: wait.dueAt, entries: [] } })
      }
      yield* boundary(attempt)
      const dueAt = target(now)
      if (dueAt <= now) return yield* stage({ _tag: "TimerFired", step: position, name, dueAt })
      // What the Attempt staged is dropped with it: the next Attempt stages it again.
      return yield* halt(attempt, {
        _tag: "Wait",
        park: { wait: { _tag: "Sleep", step: position, name, dueAt, since: now }, dueAt, entries: [] },
      })
    })

  const sleep = (name: string, duration: Duration.Input): Effect.Effect<void> =>
    Effect.suspend(() => {
      // Read the number itself: Effect's Duration takes NaN for zero, which would not sleep at all.
      const decoded =
        typeof duration === "number"
          ? Option.some(duration)
          : Option.map(Duration.fromInput(duration), Duration.toMillis)
      if (Option.isNone(decoded))
        return Effect.die(
          new TypeError(`sleep "${name}": the duration is not a Duration (${String(duration)})`),
        )
      const millis = decoded.value
      return Number.isFinite(millis)
        ? sleepAt(name, (now) => now + millis)
        : Effect.die(new TypeError(`sleep "${name}": the duration is not a finite number (${millis})`))
    })

  const sleepUntil = (name: string, epochMillis: number): Effect.Effect<void> =>
    Number.isFinite(epochMillis)
      ? sleepAt(name, () => epochMillis)
      : Effect.die(new TypeError(`sleepUntil "${name}": the instant is not a finite number (${epochMillis})`))

  /** Fails a step whose options are invalid, journaled so replay agrees. */
  const refuseOptions = (position: number, name: string, problem: string) =>
    Effect.gen(function* () {
      yield* boundary(attempt)
      const error = `step "${name}": ${problem}`
      yield* append({ _tag: "StepFailed", step: position, name, error })
      attempt.liveSteps++
      return yield* Effect.fail(AgentFailure.nonRetryable(error))
    })

  /**
   * A step with a retry policy or a timeout: attempts after the recorded failures run live; a
   * retried failure is journaled with its due time and the Attempt parks until then.
   */
  const retriedStep = <A>(
    position: number,
    name: string,
    effect: Effect.Effect<A, AgentFailure>,
    codec: JsonCodec<A>,
    options: Partial<StepOptions<A>> & StepRunOptions,
    found: JournalPosition | undefined,
  ): Effect.Effect<A, AgentFailure> =>
    Effect.gen(function* () {
      const prepared = prepareRetry(options.retry)
      const problem = Result.isFailure(prepared) ? prepared.failure : timeoutProblem(options.timeoutMillis)
      if (problem !== undefined) return yield* refuseOptions(position, name, problem)
      const policy = Result.getOrUndefined(prepared)
      const failures: Array<FailedAttempt & { readonly retryAt: number }> = [...(found?.attemptsFailed ?? [])]
      const seed = `${attempt.claim.submissionId}:${position}`
      while (true) {
        const now = yield* Clock.currentTimeMillis
        const last = failures.at(-1)
        const attempts = policy?._tag === "Backoff" ? { attempts: policy.attempts } : {}
        if (last !== undefined && last.retryAt > now) {
          // The backoff is not over (woken early): wait for the recorded time, never recompute it.
          return yield* halt(attempt, {
            _tag: "Wait",
            park: {
              wait: {
                _tag: "Retry",
                step: position,
                name,
                attempt: failures.length,
                ...attempts,
                dueAt: last.retryAt,
                since: last.failedAt,
              },
              dueAt: last.retryAt,
              entries: [],
            },
          })
        }
        yield* boundary(attempt)
        const outcome = yield* calls.runOnce(name, effect, codec, {
          interruptible: true,
          timeoutMillis: options.timeoutMillis,
        })
        const number = failures.length + 1
        const counted = number > 1 ? { attempts: number } : {}
        attempt.liveSteps++
        if (outcome._tag === "Succeeded") {
          yield* append({ _tag: "StepCompleted", step: position, name, result: outcome.result, ...counted })
          yield* hit("step:after-step-append")
          return outcome.value
        }
        const failedAt = yield* Clock.currentTimeMillis
        const failure = { error: outcome.failure.message, failedAt }
        const delay =
          policy === undefined || !isRetryable(policy, outcome.failure)
            ? Option.none<number>()
            : yield* nextDelay(policy, [...failures, failure], seed)
        if (Option.isNone(delay)) {
          yield* append({ _tag: "StepFailed", step: position, name, error: failure.error, ...counted })
          yield* hit("step:after-step-append")
          return yield* Effect.fail(outcome.failure)
        }
        // Never earlier than the due time already recorded.
        const retryAt = Math.max(failedAt + delay.value, last?.retryAt ?? -Infinity)
        const record = {
          _tag: "StepAttemptFailed",
          step: position,
          name,
          attempt: number,
          ...failure,
          retryAt,
        } as const
        failures.push(record)
        if (retryAt > failedAt) {
          return yield* halt(attempt, {
            _tag: "Wait",
            park: {
              wait: {
                _tag: "Retry",
                step: position,
                name,
                attempt: number,
                ...attempts,
                dueAt: retryAt,
                since: failedAt,
              },
              dueAt: retryAt,
              entries: takeStaged(attempt, [record]),
              after: "retry:after-failure-park",
            },
          })
        }
        // No wait: the next attempt runs in this Attempt.
        yield* append(record)
      }
    })

  return { sleep, sleepUntil, retriedStep }
}
