/**
 * The world of the binding-backoff suite: a planner request admitted under one agent digest,
 * incarnations whose registry holds a changed digest (every claim of it fails with
 * `BindingDigestMismatch`) or the admitted one, and an application host sharing the alarm
 * whose drain can fail and whose deadline the test sets.
 *
 * Each incarnation gets its own host instance, so the resources a killed incarnation leaves
 * open are its own; the maintenance failpoints check that a failure is rearmed only after the
 * event released every host resource.
 */
import { Clock, Effect, Option } from "effect"
import type { Scope } from "effect"
import {
  ThreadHostMaintenanceError,
  type ThreadHostMaintenanceService,
  type ThreadMaintenanceFailpointLocation,
} from "../../../src/Alarm.ts"
import { withDigest } from "../../../src/core/AgentRegistration.ts"
import type { SubmissionId } from "../../../src/core/Identifiers.ts"
import { type Runs, threeSteps } from "../../core/runtimeAgents.ts"
import { rowOf } from "./fixtures.ts"
import { type Incarnation, incarnation } from "../../support/incarnation.ts"
import { maintenanceSwitchboard, type Switchboard } from "../../support/switchboard.ts"

/** Base = cap = 100 ms (a 50 ms floor, failure retries within [50, 100] ms), a 1 s scan cadence. */
export const bindingConfig = { alarmBackoffBase: 100, alarmBackoffCap: 100, wakeScanInterval: 1_000 } as const

/** What the test controls of the application host, shared by every incarnation. */
export interface HostControl {
  failing: boolean
  deadline: number | undefined
  /** Drains that found the deadline due and cleared it. */
  serviced: number
  /** Host resources still open at each `maintenance:retry:before` hit. */
  readonly openAtRetry: Array<number>
}

/** A fresh host control: healthy, nothing pending. */
export const makeHostControl = (): HostControl => ({
  failing: false,
  deadline: undefined,
  serviced: 0,
  openAtRetry: [],
})

/** One incarnation's host: its drain holds a resource in the event Scope, then fails or services. */
const makeHost = (control: HostControl) => {
  let open = 0
  const service: ThreadHostMaintenanceService = {
    dispatchTimeoutMillis: 1_000,
    pendingDeadline: Effect.sync(() => Option.fromNullishOr(control.deadline)),
    drainUntil: (): Effect.Effect<void, ThreadHostMaintenanceError, Scope.Scope> =>
      Effect.gen(function* () {
        yield* Effect.acquireRelease(
          Effect.sync(() => {
            open += 1
          }),
          () =>
            Effect.sync(() => {
              open -= 1
            }),
        )
        if (control.failing) {
          return yield* new ThreadHostMaintenanceError({
            hook: "test host",
            operation: "host drain",
            message: "host delivery remains pending",
          })
        }
        const now = yield* Clock.currentTimeMillis
        if (control.deadline !== undefined && control.deadline <= now) {
          control.deadline = undefined
          control.serviced += 1
        }
      }),
  }
  return { service, open: () => open }
}

/** The world of one test: the agents, the host control and incarnation builders. */
export const bindingWorld = (ctx: DurableObjectState, runs: Runs) => {
  const admitted = threeSteps(runs)
  const changed = withDigest(admitted, "changed-deployment-digest")
  const host = makeHostControl()

  /** An incarnation running `changed` (binding failures) or `compatible` code. */
  const codeIncarnation = (
    code: "changed" | "compatible",
    board?: Switchboard<ThreadMaintenanceFailpointLocation, never>,
  ): Effect.Effect<Incarnation, never, Scope.Scope> =>
    Effect.gen(function* () {
      const { service, open } = makeHost(host)
      const failpoints = board ?? (yield* maintenanceSwitchboard())
      return yield* incarnation(ctx, {
        agents: [code === "changed" ? changed : admitted],
        config: bindingConfig,
        host: service,
        maintenance: (location) =>
          Effect.suspend(() => {
            if (location === "maintenance:retry:before") host.openAtRetry.push(open())
            return failpoints.handler(location)
          }),
      })
    })

  /** The producer epoch of a Submission: each claim advances it. */
  const epochOf = (inc: Incarnation, submissionId: SubmissionId) =>
    Effect.map(rowOf(inc, submissionId), (row) => row.producerEpoch)

  return { host, incarnation: codeIncarnation, epochOf }
}

/** The typed message of a failed pass, if its host failed with a `ThreadHostMaintenanceError`. */
export const hostFailure = (error: unknown) =>
  error instanceof ThreadHostMaintenanceError
    ? error.message
    : `not a ThreadHostMaintenanceError: ${String(error)}`
