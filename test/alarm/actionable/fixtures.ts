/**
 * Fixtures of the actionable-path suites, over incarnations of `test/support/incarnation.ts`
 * (the production assembly of `ThreadObject`): alarm delivery as workerd does it, submissions
 * through the gate, and reads of rows, records and the maintenance record.
 *
 * Eviction is simulated in-process: a pass forked with `abandon` and frozen at a failpoint is
 * never resumed nor interrupted (no finalizer runs), and a fresh incarnation is built over the
 * same Object storage.
 */
import { Clock, Deferred, type Duration, Effect, Exit, Fiber, Option, Schema, Scope } from "effect"
import { TestClock } from "effect/testing"
import type { MaintenancePassFailure, MaintenancePassReport, ThreadMaintenance } from "../../../src/Alarm.ts"
import { define } from "../../../src/core/AgentRegistration.ts"
import { AgentId, IdempotencyKey, type SubmissionId, ThreadId } from "../../../src/core/Identifiers.ts"
import { makeRuns, ran, type Runs, threeSteps } from "../../core/runtimeAgents.ts"
import { type Incarnation, incarnation } from "../../support/incarnation.ts"
import { failAt } from "../../support/switchboard.ts"
import type { CloudflareDurableRuntimeConfigOverrides } from "../../../src/CloudflareConfig.ts"
import { alarmOf, rawState } from "../harness.ts"

/**
 * Forks `effect` where nothing will ever interrupt it: a fiber frozen at a failpoint stays
 * frozen and runs no finalizer, as if its incarnation had been killed.
 */
export const abandon = <A, E>(effect: Effect.Effect<A, E>): Effect.Effect<Fiber.Fiber<A, E>> =>
  Effect.forkIn(effect, Scope.makeUnsafe())

/** Moves virtual time forward to the stored alarm, if it is later. */
const moveToAlarm = (ctx: DurableObjectState) =>
  Effect.gen(function* () {
    const at = yield* alarmOf(ctx)
    const now = yield* Clock.currentTimeMillis
    if (at !== null && at > now) yield* TestClock.setTime(at)
  })

/**
 * One alarm delivery as workerd makes it: virtual time moves to the stored alarm (never back),
 * the slot is consumed, then the pass runs. Any alarm present afterwards was written by the pass.
 */
export const deliver = (
  ctx: DurableObjectState,
  maintenance: ThreadMaintenance["Service"],
): Effect.Effect<Exit.Exit<MaintenancePassReport, MaintenancePassFailure>> =>
  Effect.gen(function* () {
    yield* moveToAlarm(ctx)
    yield* Effect.promise(() => ctx.storage.deleteAlarm())
    return yield* Effect.exit(maintenance.pass)
  })

/** Delivers a pass that must succeed, and returns its report. */
export const deliverOk = (ctx: DurableObjectState, maintenance: ThreadMaintenance["Service"]) =>
  Effect.flatMap(deliver(ctx, maintenance), (exit) =>
    Exit.isSuccess(exit)
      ? Effect.succeed(exit.value)
      : Effect.die(new Error(`the pass failed: ${exit.cause}`)),
  )

/**
 * Delivers alarms until none is scheduled (rejected deliveries count as fired, as workerd
 * retries them); dies if that takes more than `rounds`. Returns every delivery's exit.
 */
export const converge = (ctx: DurableObjectState, maintenance: ThreadMaintenance["Service"], rounds = 40) =>
  Effect.gen(function* () {
    const exits: Array<Exit.Exit<MaintenancePassReport, MaintenancePassFailure>> = []
    while ((yield* alarmOf(ctx)) !== null) {
      if (exits.length >= rounds)
        return yield* Effect.die(new Error(`no convergence in ${rounds} deliveries`))
      exits.push(yield* deliver(ctx, maintenance))
    }
    return exits
  })

/** The report of a pass, as a tuple that reads well in assertions. */
export const reportOf = (report: MaintenancePassReport) =>
  [report.phase, report.recovered, report.settled, report.nonterminal, report.alarm] as const

/** Submits through the gate, as `ThreadObject` does. */
export const submit = (
  incarnation: Incarnation,
  thread: string,
  agent: string,
  key: string,
  input: Schema.Json,
) =>
  incarnation.maintenance.withMutation(
    incarnation.runtime.submit({
      threadId: ThreadId.make(thread),
      agentId: AgentId.make(agent),
      idempotencyKey: IdempotencyKey.make(key),
      input,
    }),
  )

/** The ledger row of a Submission, which must exist. */
export const rowOf = (incarnation: Incarnation, submissionId: SubmissionId) =>
  Effect.map(incarnation.ledger.lookup(submissionId), Option.getOrThrow)

/** The tags of a Submission's canonical records, oldest first. */
export const tagsOf = (incarnation: Incarnation, submissionId: SubmissionId) =>
  Effect.map(incarnation.history.forSubmission(submissionId), (records) =>
    records.map((record) => record.entry._tag),
  )

/** Every canonical record of a Thread, oldest first. */
export const threadRecords = (incarnation: Incarnation, thread: string) =>
  Effect.map(incarnation.history.page(ThreadId.make(thread), { limit: 1_000 }), (page) => page.records)

/** The generation pair of the maintenance record. */
export const generationsOf = (ctx: DurableObjectState) =>
  Effect.map(rawState(ctx), (raw) => ({
    dirty: BigInt(String(raw?.["dirty"])),
    processed: BigInt(String(raw?.["processed"])),
  }))

/** The stored binding waits, encoded. */
export const bindingWaitsOf = (ctx: DurableObjectState) =>
  Effect.map(
    rawState(ctx),
    (raw) =>
      (raw?.["bindingRetries"] ?? []) as ReadonlyArray<{
        readonly submissionId: string
        readonly attempts: number
        readonly notBefore: number
      }>,
  )

/**
 * Everything durable about the Object's native work: ledger rows, canonical records and the
 * maintenance record. Equal fingerprints mean nothing durable changed.
 */
export const fingerprint = (
  ctx: DurableObjectState,
  incarnation: Incarnation,
  of: { readonly submissions: ReadonlyArray<SubmissionId>; readonly threads: ReadonlyArray<string> },
) =>
  Effect.gen(function* () {
    const rows = yield* Effect.forEach(of.submissions, (id) => rowOf(incarnation, id))
    const records = yield* Effect.forEach(of.threads, (thread) => threadRecords(incarnation, thread))
    return JSON.stringify({ rows, records, record: yield* rawState(ctx) })
  })

/**
 * Its first step signals `started`, then takes `millis` of virtual time; the second takes none.
 * An Attempt whose `yieldAfter` passes meanwhile yields between them, and the resumed Attempt
 * replays the first.
 */
export const longFirstStep = (runs: Runs, millis: number, started: Deferred.Deferred<void>) =>
  define({
    id: "long-first-step",
    version: "1",
    input: Schema.Struct({ n: Schema.Int }),
    output: Schema.Int,
    program: ({ n }, ctx) =>
      Effect.gen(function* () {
        const long = yield* ctx.step(
          "long",
          ran(runs, "long").pipe(
            Effect.andThen(Deferred.succeed(started, undefined)),
            Effect.andThen(Effect.sleep(millis)),
            Effect.as(n),
          ),
        )
        return yield* ctx.step("short", Effect.as(ran(runs, "short"), long + 1))
      }),
  })

/** Settings under which a Claim stays live and unwatched through an eleven-minute step. */
export const UNHURRIED = {
  ownershipLeaseDuration: 3_600_000,
  leaseRenewalInterval: 3_600_000,
  abortPollInterval: 3_600_000,
} as const

/**
 * Delivers one pass whose head runs `longFirstStep`: once its first step signals `started`,
 * virtual time moves `duration` forward while the step sleeps. Returns the pass's report.
 */
export const deliverAcross = (
  ctx: DurableObjectState,
  maintenance: ThreadMaintenance["Service"],
  started: Deferred.Deferred<void>,
  duration: Duration.Input,
) =>
  Effect.gen(function* () {
    const pass = yield* Effect.forkChild(deliverOk(ctx, maintenance))
    yield* Deferred.await(started)
    // Let the step reach its sleep before virtual time moves.
    yield* TestClock.withLive(Effect.sleep("10 millis"))
    yield* TestClock.adjust(duration)
    return yield* Fiber.join(pass)
  })

/** An incarnation of three-step agents whose second Attempt fails right after its Claim. */
export const failingSecondAttempt = (
  ctx: DurableObjectState,
  config?: CloudflareDurableRuntimeConfigOverrides,
) =>
  Effect.gen(function* () {
    const runs = yield* makeRuns
    return yield* incarnation(ctx, {
      agents: [threeSteps(runs)],
      runtime: yield* failAt("claim:after-claim", 2),
      ...(config === undefined ? {} : { config }),
    })
  })
