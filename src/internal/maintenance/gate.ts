/**
 * The shared prearm / acknowledgement boundary of one physical Object. Every producer of
 * native work advances the durable generation and commits an alarm before its body runs;
 * the pass takes snapshots and acknowledges under the same permit, so no producer can begin
 * between a snapshot and what the pass certifies from it.
 *
 * The active count and the permit are memory only: after eviction the durable dirty
 * generation carries correctness. The permit is never held across a mutation body.
 */
import { spanned } from "../../core/internal/spanned.ts"
import { Clock, Context, Effect, Layer, Semaphore } from "effect"
import { DurableObjectContext } from "../../CloudflareBindings.ts"
import { CloudflareDurableRuntimeConfig } from "../../CloudflareConfig.ts"
import { alarmTiming, decideAlarm } from "./alarmPolicy.ts"
import { writeAlarm } from "./alarmWrite.ts"
import type { DurableAlarmError } from "./errors.ts"
import { ThreadMaintenanceFailpoint } from "./failpoint.ts"
import { readMaintenanceState, ThreadMaintenanceState, writeMaintenanceState } from "./state.ts"
import { makeTransact } from "./transaction.ts"

/** Options of a gated mutation. */
export interface MutationOptions {
  /**
   * Native admission, approval, abort and unknown resolution keep the default `true`.
   * Receipt-only bookkeeping (projection, relay, reply) must pass `false`: its own durable
   * `pendingDeadline` owns scheduling, so it must not create native recovery debt.
   */
  readonly invalidatesRecovery: boolean
  /**
   * The mutation creates work due at this instant (a delayed admission, a schedule's next
   * occurrence): the prearm lowers the record's due bound to it, and, when nothing else is
   * invalidated, ensures the alarm by then instead of at once.
   */
  readonly dueAt?: number
}

/** The mutation gate; one instance per physical Object, shared by every rebuilt layer. */
export class ThreadMutationGate extends Context.Service<
  ThreadMutationGate,
  {
    /** Prearms (generation + alarm in one transaction), then runs `body` counted as active. */
    readonly withMutation: <A, E, R>(
      body: Effect.Effect<A, E, R>,
      options?: MutationOptions,
    ) => Effect.Effect<A, E | DurableAlarmError, R>
    /** Runs `body` with the number of active mutations, excluding new ones meanwhile. */
    readonly withSnapshot: <A, E, R>(
      body: (active: number) => Effect.Effect<A, E, R>,
    ) => Effect.Effect<A, E, R>
  }
>()("@effect-agent/platform-cloudflare/internal/ThreadMutationGate") {
  static readonly layer: Layer.Layer<
    ThreadMutationGate,
    never,
    DurableObjectContext | CloudflareDurableRuntimeConfig | ThreadMaintenanceFailpoint
  > = Layer.effect(
    this,
    Effect.gen(function* () {
      const { ctx } = yield* DurableObjectContext
      const config = yield* CloudflareDurableRuntimeConfig
      const failpoint = yield* ThreadMaintenanceFailpoint
      const transact = makeTransact(ctx.storage)
      const permit = yield* Semaphore.make(1)
      const timing = alarmTiming(config)
      let active = 0

      const beginMutation = spanned("ThreadMaintenance.beginMutation")(function* (
        invalidatesRecovery: boolean,
        dueAt: number | undefined,
      ) {
        yield* failpoint.hit("maintenance:dirty:before")
        const now = yield* Clock.currentTimeMillis
        yield* transact("advance maintenance generation", (txn) => {
          const { state, initialized } = readMaintenanceState(txn)
          const lowered = dueAt !== undefined && (state.nextDueAt === undefined || dueAt < state.nextDueAt)
          if (invalidatesRecovery || lowered) {
            writeMaintenanceState(
              txn,
              ThreadMaintenanceState.make({
                ...state,
                ...(invalidatesRecovery ? { dirty: state.dirty + 1n } : {}),
                ...(lowered ? { nextDueAt: dueAt } : {}),
              }),
            )
          } else if (!initialized) {
            writeMaintenanceState(txn, state)
          }
          writeAlarm(
            txn,
            decideAlarm(timing, {
              commit: "mutation",
              now,
              ...(invalidatesRecovery || dueAt === undefined ? {} : { dueAt, record: state }),
            }),
          )
        })
        yield* failpoint.hit("maintenance:dirty:after")
        active += 1
      })

      const release = permit.withPermit(
        Effect.sync(() => {
          active = Math.max(0, active - 1)
        }),
      )

      return {
        withMutation: <A, E, R>(body: Effect.Effect<A, E, R>, options?: MutationOptions) =>
          Effect.acquireUseRelease(
            permit.withPermit(beginMutation(options?.invalidatesRecovery ?? true, options?.dueAt)),
            () =>
              failpoint
                .hit("maintenance:mutation:armed")
                .pipe(Effect.andThen(body), Effect.tap(failpoint.hit("maintenance:mutation:finished"))),
            () => release,
          ),
        withSnapshot: <A, E, R>(body: (active: number) => Effect.Effect<A, E, R>) =>
          permit.withPermit(Effect.suspend(() => body(active))),
      }
    }),
  )
}
