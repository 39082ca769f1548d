/**
 * A kill at every runtime failpoint, one at a time: the same journey (steps, a cooperative
 * yield, a lease renewal, an uncertain step, a reconciled uncertain step whose first run is cut,
 * an approval, and an aborted Submission in another lane) is driven to the end through fresh
 * incarnations, and each Submission settles exactly once.
 */
import { describe, expect, it } from "@effect/vitest"
import { Clock, DateTime, Deferred, Effect, Exit, Fiber, Option, Predicate, Schema, Stream } from "effect"
import { TestClock } from "effect/testing"
import { Reconcile } from "../../src/core/AgentContext.ts"
import { define } from "../../src/core/AgentRegistration.ts"
import { ThreadId } from "../../src/core/Identifiers.ts"
import {
  RUNTIME_FAILPOINT_LOCATIONS,
  type RuntimeFailpointHandler,
  type RuntimeFailpointLocation,
} from "../../src/core/RuntimeFailpoint.ts"
import { failpointError, runtimeSwitchboard } from "../support/switchboard.ts"
import { echo, makeRuns, ran, runsOf, type Runs } from "./runtimeAgents.ts"
import { rowOf, submitTo, tagsOf } from "./runtimeFixtures.ts"
import {
  type Incarnation,
  ledgerOf,
  runtimeHarnesses,
  runtimeOf,
  type RuntimeWorld,
} from "./runtimeHarness.ts"

const journey = (runs: Runs) =>
  define({
    id: "journey",
    version: "1",
    input: Schema.Struct({ n: Schema.Int }),
    output: Schema.String,
    program: ({ n }, ctx) =>
      Effect.gen(function* () {
        // Each plain step takes 5 ms of virtual time: the second boundary renews, the third yields.
        const a = yield* ctx.step("a", Effect.as(Effect.andThen(ran(runs, "a"), TestClock.adjust(5)), n))
        const b = yield* ctx.step("b", Effect.as(Effect.andThen(ran(runs, "b"), TestClock.adjust(5)), a + 1))
        const u = yield* ctx.uncertainStep("u", Effect.as(ran(runs, "u"), `u${b}`), { result: Schema.String })
        // Its first run is cut before the effect (the Attempt ends mid-step): the next Attempt
        // asks its reconcile, which answers from whether the effect really ran.
        yield* ctx.uncertainStep(
          "v",
          Effect.flatMap(runsOf(runs), (counts) =>
            counts["v-cut"] === undefined
              ? Effect.andThen(ran(runs, "v-cut"), Effect.interrupt)
              : Effect.as(ran(runs, "v"), "v"),
          ),
          {
            result: Schema.String,
            reconcile: Effect.andThen(
              ran(runs, "reconcile"),
              Effect.map(runsOf(runs), (counts) =>
                counts["v"] === undefined ? Reconcile.notHappened : Reconcile.happened("v"),
              ),
            ),
          },
        )
        const decision = yield* ctx.requestApproval({ u })
        return yield* ctx.step("c", Effect.as(ran(runs, "c"), `${u}-${decision.approved}`))
      }),
  })

interface Crash {
  readonly handler: RuntimeFailpointHandler
  /** Completes when the failpoint froze its fiber (a kill); never for a typed failure. */
  readonly reached: Effect.Effect<void>
  /** Whether the fault was injected (a typed failure inside a finalizer is swallowed there). */
  readonly fired: Effect.Effect<boolean>
}

/** Freezes the `index`-th hit of any location (1-based) forever. */
const freezeAtHit = (index: number) =>
  Effect.gen(function* () {
    const board = yield* runtimeSwitchboard()
    const reached = yield* Deferred.make<void>()
    yield* board.atHit(index, () => Effect.andThen(Deferred.succeed(reached, undefined), Effect.never))
    return {
      handler: board.handler,
      reached: Deferred.await(reached),
      fired: Deferred.isDone(reached),
    } satisfies Crash
  })

/** Fails the `index`-th hit of any location (1-based) with a typed error. */
const failAtHit = (index: number) =>
  Effect.gen(function* () {
    const board = yield* runtimeSwitchboard()
    const hit = yield* Deferred.make<void>()
    yield* board.atHit(index, (location) =>
      Effect.andThen(Deferred.succeed(hit, undefined), Effect.fail(failpointError(location))),
    )
    return { handler: board.handler, reached: Effect.never, fired: Deferred.isDone(hit) } satisfies Crash
  })

const drive = (
  world: RuntimeWorld,
  failpoint: RuntimeFailpointHandler | undefined,
  crash: Crash | undefined,
) =>
  Effect.gen(function* () {
    const runs = yield* makeRuns
    const agents = [journey(runs), echo]
    const config = { leaseRenewalInterval: 1 }
    let current: Incarnation = yield* world.incarnation({
      agents,
      config,
      ...(failpoint === undefined ? {} : { failpoint }),
    })
    let crashed = false

    /**
     * The journey's own cut: the Attempt ended mid-step as if its process died, so time moves
     * past any lease it may still hold (its release can fail too) and the incarnation carries on.
     */
    const cut = Effect.as(TestClock.adjust(30_001), Option.none<never>())

    /** Runs one operation; after a kill, continues with a fresh incarnation once leases expired. */
    const op = <A, E>(f: (incarnation: Incarnation) => Effect.Effect<A, E>) =>
      Effect.gen(function* () {
        if (crash === undefined || crashed) {
          const exit = yield* Effect.exit(f(current))
          if (!Exit.hasInterrupts(exit)) return Option.some(yield* exit)
          return yield* cut
        }
        const fiber = yield* Effect.forkDetach(f(current))
        const outcome = yield* Effect.raceFirst(
          Effect.map(Fiber.await(fiber), (exit) => ({ _tag: "Done" as const, exit })),
          Effect.as(crash.reached, { _tag: "Killed" as const }),
        )
        if (outcome._tag === "Done") {
          if (Exit.hasInterrupts(outcome.exit)) return yield* cut
          const failed = Exit.findErrorOption(outcome.exit)
          if (Option.isNone(failed) || !Predicate.isTagged(failed.value, "DurableRuntimeFailpointError")) {
            return Option.some(yield* outcome.exit)
          }
          // A typed failure ends the operation; the same incarnation carries on.
          crashed = true
          return Option.none<A>()
        }
        crashed = true
        yield* TestClock.adjust(30_001)
        current = yield* world.incarnation({ agents, config })
        return Option.none<A>()
      })

    const ignoreNotPending = <A, E extends { readonly _tag: string }>(effect: Effect.Effect<A, E>) =>
      Effect.catchIf(
        Effect.asVoid(effect),
        (error): error is E => error._tag === "NotPending",
        () => Effect.void,
      )

    const submit = (lane: string, agent: string, input: unknown) =>
      Effect.gen(function* () {
        while (true) {
          const receipt = yield* op((incarnation) => submitTo(incarnation, lane, agent, lane, input))
          if (Option.isSome(receipt)) return receipt.value
        }
      })
    const a = yield* submit("a", "journey", { n: 1 })
    const b = yield* submit("b", "echo", { text: "never" })
    while (Option.isNone(yield* op((incarnation) => runtimeOf(incarnation).abort(b.submissionId)))) {
      // A killed abort is repeated by its caller.
    }

    for (let round = 0; round < 12; round++) {
      yield* op((incarnation) => runtimeOf(incarnation).runRecovery)
      const rowA = yield* rowOf(current, a.submissionId)
      const rowB = yield* rowOf(current, b.submissionId)
      if (rowA.state === "settled" && rowB.state === "settled") break
      if (rowA.state === "suspended") {
        yield* op((incarnation) =>
          ignoreNotPending(runtimeOf(incarnation).resolveApproval(a.submissionId, { approved: true })),
        )
      } else if (rowA.state === "unknown") {
        yield* op((incarnation) =>
          ignoreNotPending(
            runtimeOf(incarnation).resolveUnknown(a.submissionId, { _tag: "Succeeded", value: "resolved" }),
          ),
        )
      } else {
        const now = yield* Clock.currentTimeMillis
        yield* op((incarnation) =>
          runtimeOf(incarnation).processThreadHead(ThreadId.make("a"), {
            yieldAfter: DateTime.makeUnsafe(now + 7),
          }),
        )
      }
      yield* op((incarnation) =>
        runtimeOf(incarnation).processThreadHead(ThreadId.make("b"), {
          yieldAfter: DateTime.makeUnsafe(Number.MAX_SAFE_INTEGER / 2048),
        }),
      )
    }

    const settledA = yield* rowOf(current, a.submissionId)
    const settledB = yield* rowOf(current, b.submissionId)
    return {
      crashed: crashed || (crash !== undefined && (yield* crash.fired)),
      runs: yield* runsOf(runs),
      a: settledA,
      b: settledB,
      tagsA: yield* tagsOf(current, a.submissionId),
      tagsB: yield* tagsOf(current, b.submissionId),
      remaining: yield* Stream.runCollect(ledgerOf(current).scanNonterminal),
    }
  })

const once = (tags: ReadonlyArray<string>) => tags.filter((tag) => tag === "SubmissionSettled").length

for (const harness of runtimeHarnesses) {
  describe(`DurableAgentRuntime crash matrix (${harness.label})`, () => {
    it.effect("hits every failpoint location on the journey", () =>
      harness.run((world) =>
        Effect.gen(function* () {
          const hits: Array<RuntimeFailpointLocation> = []
          const result = yield* drive(
            world,
            (location) => Effect.sync(() => void hits.push(location)),
            undefined,
          )
          expect(new Set(hits)).toEqual(new Set(RUNTIME_FAILPOINT_LOCATIONS))
          expect(result.a.settlement).toMatchObject({ outcome: "completed", output: "u2-true" })
          expect(result.b.settlement?.outcome).toBe("aborted")
          expect(result.runs).toEqual({ a: 1, b: 1, u: 1, "v-cut": 1, reconcile: 1, v: 1, c: 1 })
          expect(result.tagsA).toContain("ReconcileAnswered")
          expect(result.tagsA).toContain("ApprovalResolved")
        }),
      ),
    )

    for (const [mode, inject] of [
      ["a kill", freezeAtHit],
      ["a typed failure", failAtHit],
    ] as const) {
      it.effect(
        `settles every Submission exactly once after ${mode} at each hit`,
        () =>
          Effect.gen(function* () {
            const hits: Array<RuntimeFailpointLocation> = []
            yield* harness.run((world) =>
              drive(world, (location) => Effect.sync(() => void hits.push(location)), undefined),
            )
            for (const [offset, location] of hits.entries()) {
              const label = `${mode} at hit ${offset + 1} (${location})`
              const result = yield* harness.run((world) =>
                Effect.flatMap(inject(offset + 1), (crash) => drive(world, crash.handler, crash)),
              )
              expect(result.crashed, label).toBe(true)
              expect(result.a.settlement?.outcome, label).toBe("completed")
              expect(result.b.settlement?.outcome, label).toBe("aborted")
              expect([once(result.tagsA), once(result.tagsB)], label).toEqual([1, 1])
              expect(result.remaining, label).toEqual([])
              // The uncertain effect never runs twice; plain steps run at least once.
              expect(result.runs.u ?? 0, label).toBeLessThanOrEqual(1)
              expect(result.runs.v ?? 0, label).toBeLessThanOrEqual(1)
              expect(result.runs.c ?? 0, label).toBeGreaterThanOrEqual(1)
            }
          }),
        // One fresh Object per injected fault.
        60_000,
      )
    }
  })
}
