/**
 * Step retries as values: a policy checked once, whether a failed attempt is retried, and when
 * the next attempt may run. Random draws are seeded by the Submission, the step and the
 * attempt, so a computation repeated after a crash (before its record committed) gives the
 * same due time, and a seeded simulation replays byte for byte. Replay never computes a
 * recorded due time again: it reads it from the journal.
 */
import { Cause, Duration, Effect, Option, Random, Result, Schedule } from "effect"
import * as Pull from "effect/Pull"
import {
  BACKOFF_DEFAULTS,
  type Backoff,
  type RetryPolicy,
  STEP_TIMEOUT_MAX_MILLIS,
} from "../../../AgentContext.ts"
import { AgentFailure } from "../../../AgentRegistration.ts"

/** The most attempts a policy may allow. @internal */
export const MAX_ATTEMPTS = 100

/** A retry policy whose options were checked. @internal */
export type PreparedRetry =
  | {
      readonly _tag: "Backoff"
      readonly attempts: number
      readonly backoff: Required<Backoff>
      readonly retryable: ((error: AgentFailure) => boolean) | undefined
    }
  | {
      readonly _tag: "Schedule"
      readonly schedule: Schedule.Schedule<unknown, AgentFailure>
      readonly retryable: ((error: AgentFailure) => boolean) | undefined
    }

const between = (name: string, value: number, min: number, max: number, integer = false) =>
  Number.isFinite(value) && value >= min && value <= max && (!integer || Number.isInteger(value))
    ? undefined
    : `${name} must be ${integer ? "an integer" : "a number"} between ${min} and ${max}, got ${value}`

/** Checks a policy's options once; the message names the first bad one. @internal */
export const prepareRetry = (
  policy: RetryPolicy | undefined,
): Result.Result<PreparedRetry | undefined, string> => {
  if (policy === undefined) return Result.succeed(undefined)
  if ("schedule" in policy) {
    return Schedule.isSchedule(policy.schedule)
      ? Result.succeed({ _tag: "Schedule", schedule: policy.schedule, retryable: policy.retryable })
      : Result.fail("retry.schedule must be a Schedule")
  }
  const backoff: Required<Backoff> = { ...BACKOFF_DEFAULTS, ...policy.backoff }
  const invalid =
    between("retry.attempts", policy.attempts, 1, MAX_ATTEMPTS, true) ??
    between("retry.backoff.capMillis", backoff.capMillis, 0, 31_536_000_000) ??
    between("retry.backoff.baseMillis", backoff.baseMillis, 0, backoff.capMillis) ??
    between("retry.backoff.factor", backoff.factor, 1, 1_000) ??
    between("retry.backoff.jitter", backoff.jitter, 0, 1)
  return invalid === undefined
    ? Result.succeed({ _tag: "Backoff", attempts: policy.attempts, backoff, retryable: policy.retryable })
    : Result.fail(invalid)
}

/** Why a step's timeout is invalid, if it is. @internal */
export const timeoutProblem = (timeoutMillis: number | undefined): string | undefined =>
  timeoutMillis === undefined
    ? undefined
    : between("timeoutMillis", timeoutMillis, 1, STEP_TIMEOUT_MAX_MILLIS, true)

/**
 * The wait after failed attempt `attempt` (1-based): `base · factor^(attempt - 1)`, scaled by
 * `1 + jitter · (2r - 1)` for a draw `r` in [0, 1), never above the cap. @internal
 */
export const backoffDelay = (backoff: Required<Backoff>, attempt: number, draw: number): number => {
  const exponential = Math.min(
    backoff.capMillis,
    backoff.baseMillis * backoff.factor ** Math.max(0, attempt - 1),
  )
  const scaled = exponential * (1 + backoff.jitter * (2 * draw - 1))
  return Math.max(0, Math.min(backoff.capMillis, Math.round(scaled)))
}

/** A failed attempt as the journal records it. @internal */
export interface FailedAttempt {
  readonly error: string
  readonly failedAt: number
  readonly retryable?: false
}

/** Whether a typed failure may be retried at all: the marker first, then the predicate. @internal */
export const isRetryable = (policy: PreparedRetry, error: AgentFailure): boolean =>
  error.retryable !== false && (policy.retryable === undefined || policy.retryable(error))

/**
 * The wait before the attempt after `failures` (every failure so far, the last one just now),
 * or `None` when the policy allows no further attempt. `seed` names the step of its Submission.
 * @internal
 */
export const nextDelay = (
  policy: PreparedRetry,
  failures: ReadonlyArray<FailedAttempt>,
  seed: string,
): Effect.Effect<Option.Option<number>> => {
  const attempt = failures.length
  if (policy._tag === "Backoff") {
    if (attempt >= policy.attempts) return Effect.succeedNone
    return Random.next.pipe(
      Effect.map((draw) => Option.some(backoffDelay(policy.backoff, attempt, draw))),
      Random.withSeed(`${seed}:${attempt}`),
    )
  }
  // A schedule keeps its state in its step function: it is stepped again over every failure.
  return Effect.gen(function* () {
    const step = yield* Schedule.toStep(policy.schedule)
    let delay: Option.Option<number> = Option.none()
    for (const failure of failures) {
      const stepped = yield* Effect.exit(step(failure.failedAt, new AgentFailure({ message: failure.error })))
      if (stepped._tag === "Failure") {
        if (Pull.isDoneCause(stepped.cause)) return Option.none<number>()
        return yield* Effect.die(Cause.squash(stepped.cause))
      }
      delay = Option.some(Math.max(0, Duration.toMillis(stepped.value[1])))
    }
    return delay
  }).pipe(Random.withSeed(seed))
}
