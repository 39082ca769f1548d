/**
 * The seeded driver of one simulated run. A chaos phase picks actions (submit to a lane,
 * replay a key, approve or deny, resolve an unknown, abort, admin retry, advance virtual time,
 * deliver the due alarm, evict, redeploy, release a paused fiber) while failpoints fire by
 * seed; a calm phase then stops injecting, resolves every external wait and delivers alarms
 * until the Object is quiescent. Invariants are checked after every step; at the end every
 * accepted Submission must have settled exactly once with the outcome its input implies.
 */
import { Effect, Exit } from "effect"
import { TestClock } from "effect/testing"
import type { SubmissionSnapshot } from "../../../src/core/SubmissionLedger.ts"
import type { ThreadId } from "../../../src/core/Identifiers.ts"
import { admitsSharedDigest, AgentInput, type AgentKind, type Deployment } from "./agents.ts"
import { makeFaultPlan } from "./faults.ts"
import { checkEndState } from "./endState.ts"
import { readRecord } from "./invariants.ts"
import { lanes, openWaits } from "./oracle.ts"
import { makeRng, type Rng } from "./random.ts"
import { makeWorld, type World } from "./world.ts"

const LANES = ["lane-a", "lane-b", "lane-c"] as unknown as ReadonlyArray<ThreadId>
const KINDS: ReadonlyArray<AgentKind> = ["stepper", "charger", "reviewer"]
/** Virtual time starts here (2026-01-01), far from 0 so no deadline is special. */
const EPOCH = 1_767_225_600_000

/** How long one run is. */
export interface SimulationOptions {
  /** The chaos phase of a run is drawn between these step counts. */
  readonly chaosSteps: readonly [number, number]
  readonly calmRounds: number
  readonly verbose?: boolean
}

/** What one run did. */
export interface RunReport {
  readonly seed: number
  readonly steps: number
  readonly checks: number
  readonly violations: ReadonlyArray<string>
  readonly trace: ReadonlyArray<string>
  readonly stats: Readonly<Record<string, number | string>>
  readonly checksByKind: Readonly<Record<string, number>>
}

const describeExit = (exit: Exit.Exit<unknown, unknown>): string => {
  if (Exit.isSuccess(exit)) return "ok"
  const error = exit.cause.reasons.find((reason) => reason._tag === "Fail")
  if (error?._tag === "Fail") {
    const value = error.error as { readonly _tag?: string }
    return `failed ${value._tag ?? "error"}`
  }
  return exit.cause.reasons.some((reason) => reason._tag === "Interrupt") ? "interrupted" : "died"
}

/** The driver's bookkeeping of one run. */
const makeDriver = (world: World, rng: Rng, log: (line: string) => void, verbose: boolean) => {
  const labels = new Map<string, string>()
  const label = (submissionId: string) => {
    let name = labels.get(submissionId)
    if (name === undefined) {
      name = `s${labels.size + 1}`
      labels.set(submissionId, name)
    }
    return name
  }
  const requests: Array<{
    threadId: ThreadId
    agentId: AgentKind
    idempotencyKey: string
    input: AgentInput
  }> = []
  const rows = () => [...world.store.rows.values()]
  const entriesOf = (row: SubmissionSnapshot) =>
    (world.store.historyBySubmission.get(row.submissionId) ?? []).map((record) => record.entry)
  const awaitingApproval = () =>
    rows().filter((row) => row.state === "suspended" && openWaits(entriesOf(row)).approval)
  const awaitingResolution = () =>
    rows().filter((row) => row.state === "unknown" && openWaits(entriesOf(row)).uncertain)

  const submit = (request: (typeof requests)[number], note: string) =>
    world.call(
      "submit",
      (incarnation) => incarnation.entry.submit(request),
      (exit) =>
        log(
          `  submit ${note} ${request.agentId}@${request.threadId} -> ${
            Exit.isSuccess(exit)
              ? `${label(exit.value.submissionId)}${exit.value.replayed ? " (replayed)" : ""}`
              : describeExit(exit)
          }`,
        ),
    )

  const approve = (row: SubmissionSnapshot, approved: boolean) =>
    world.call(
      "resolveApproval",
      (incarnation) =>
        incarnation.entry.resolveApproval({
          threadId: row.threadId,
          submissionId: row.submissionId,
          decision: approved ? { approved, note: `ok-${rng.int(0, 9)}` } : { approved },
        }),
      (exit) => log(`  ${approved ? "approve" : "deny"} ${label(row.submissionId)} -> ${describeExit(exit)}`),
    )

  const resolve = (row: SubmissionSnapshot, succeeded: boolean) =>
    world.call(
      "resolveUnknown",
      (incarnation) =>
        incarnation.entry.resolveUnknown({
          threadId: row.threadId,
          submissionId: row.submissionId,
          resolution: succeeded
            ? { _tag: "Succeeded", value: `resolved-${rng.int(0, 9)}` }
            : { _tag: "Failed", message: "the provider refused the charge" },
        }),
      (exit) =>
        log(
          `  resolve ${label(row.submissionId)} ${succeeded ? "succeeded" : "failed"} -> ${describeExit(exit)}`,
        ),
    )

  const addressed = (name: "abort" | "retry", row: SubmissionSnapshot) =>
    world.call(
      name,
      (incarnation) => incarnation.entry[name]({ threadId: row.threadId, submissionId: row.submissionId }),
      (exit) => log(`  ${name} ${label(row.submissionId)} -> ${describeExit(exit)}`),
    )

  /** Advances virtual time to `to` (never backwards). */
  const advanceTo = (to: number) => (to > world.now() ? TestClock.setTime(to) : Effect.void)

  const chaosStep = Effect.gen(function* () {
    const action = rng.weighted({
      submit: 20,
      replay: 3,
      deliver: 24,
      early: 3,
      advance: 16,
      approve: 8,
      resolve: 6,
      abort: 6,
      retry: 2,
      evict: 5,
      redeploy: 2,
      release: 8,
    })
    log(`  ${action}`)
    switch (action) {
      case "submit": {
        const kind = rng.pick(KINDS)
        const agentId = kind === "charger" && !admitsSharedDigest(world.deployment, kind) ? "stepper" : kind
        const request = {
          threadId: rng.pick(LANES),
          agentId,
          idempotencyKey: `key-${requests.length + 1}`,
          input: {
            n: rng.int(0, 99),
            steps: rng.int(1, 3),
            sleep: rng.pick([0, 0, 40, 300, 1_200]),
            fail: rng.chance(0.1),
          },
        }
        requests.push(request)
        return yield* submit(request, "new")
      }
      case "replay": {
        if (requests.length === 0) return
        const original = rng.pick(requests)
        if (original.agentId === "charger" && !admitsSharedDigest(world.deployment, "charger")) return
        // Now and then the same key with another payload: a typed conflict, nothing admitted.
        const changed = rng.chance(0.2)
        return yield* submit(
          changed ? { ...original, input: { ...original.input, n: original.input.n + 1 } } : original,
          changed ? "conflicting" : "replay",
        )
      }
      case "deliver": {
        const at = world.storage.alarm
        if (at !== null && at > world.now() && rng.chance(0.7)) {
          log(`  advance to the alarm ${at}`)
          yield* advanceTo(at)
          yield* world.settle
        }
        if (!(yield* world.deliver())) log(`  nothing to deliver`)
        return
      }
      case "early":
        // A forced or duplicate delivery before the alarm is due.
        if (!(yield* world.deliver({ early: true }))) log(`  nothing to deliver`)
        return
      case "advance": {
        const by = rng.chance(0.02)
          ? 15 * 60_000
          : rng.pick([1, 10, 50, 100, 500, 1_000, 2_000, 5_000, 30_000, 61_000])
        log(`  advance ${by} ms`)
        return yield* TestClock.adjust(by)
      }
      case "approve": {
        const waiting = awaitingApproval()
        if (waiting.length > 0) yield* approve(rng.pick(waiting), rng.chance(0.75))
        return
      }
      case "resolve": {
        const waiting = awaitingResolution()
        if (waiting.length > 0) yield* resolve(rng.pick(waiting), rng.chance(0.7))
        return
      }
      case "abort": {
        const all = rows()
        const open = all.filter((row) => row.state !== "settled")
        const pool = open.length > 0 && rng.chance(0.85) ? open : all
        if (pool.length > 0) yield* addressed("abort", rng.pick(pool))
        return
      }
      case "retry": {
        const running = rows().filter((row) => row.state === "running")
        if (running.length > 0) yield* addressed("retry", rng.pick(running))
        return
      }
      case "evict":
        return yield* world.evict("evicted by the driver")
      case "redeploy": {
        const next = rng.pick<Deployment>(["full", "full", "without-reviewer", "charger-changed"])
        log(`  redeploy ${next}`)
        return yield* world.redeploy(next)
      }
      case "release": {
        if (world.paused.length === 0) return
        if (rng.chance(0.3)) {
          while (world.paused.length > 0) yield* world.release(0)
        } else {
          yield* world.release(rng.int(0, world.paused.length - 1))
        }
        return
      }
    }
  })

  /** The open rows, for the trace. */
  const openRows = () =>
    rows()
      .filter((row) => row.state !== "settled")
      .map(
        (row) =>
          `${label(row.submissionId)}@${row.threadId}#${row.queueSequence} ${row.agentId} ${row.state} e${row.producerEpoch}${row.abortRequested ? " abort" : ""}${row.ownership === undefined ? "" : ` lease ${row.ownership.leaseExpiresAt}`}`,
      )
      .join("; ")

  /** One round of convergence: resolve waits, then move time or deliver. `false`: quiescent. */
  const calmStep = Effect.gen(function* () {
    if (verbose) log(`  open: ${openRows()}`)
    while (world.paused.length > 0) yield* world.release(0)
    for (const row of awaitingApproval()) yield* approve(row, rng.chance(0.7))
    for (const row of awaitingResolution()) yield* resolve(row, rng.chance(0.7))
    yield* world.settle
    const open = rows().some((row) => row.state !== "settled")
    if (world.handlerRunning) {
      log(`  advance 1000 ms (handler running)`)
      yield* TestClock.adjust(1_000)
      return true
    }
    const at = world.storage.alarm
    if (at !== null) {
      yield* advanceTo(at)
      yield* world.settle
      yield* world.deliver()
      return true
    }
    if (world.inFlight.size > 0) {
      log(
        `  waiting for ${[...world.inFlight.values()].map((call) => `${call.name}@${call.incarnation}`).join(", ")}`,
      )
      yield* TestClock.adjust(100)
      return true
    }
    if (open) {
      const stranded = lanes(world.store).filter((lane) => lane.autonomous)
      world.monitor.check(
        "liveness",
        stranded.length === 0,
        () =>
          `stranded: ${stranded.map((lane) => `${lane.threadId} head ${label(lane.head.submissionId)} ${lane.head.state}`).join(", ")} with no alarm, pass or call`,
      )
      return stranded.length === 0 && awaitingApproval().length + awaitingResolution().length > 0
    }
    return false
  })

  return { chaosStep, calmStep, label }
}

/** Runs one seed to quiescence and reports what it checked. */
export const simulate = (seed: number, options: SimulationOptions) =>
  Effect.gen(function* () {
    const rng = makeRng(seed)
    const trace: Array<string> = []
    const log = (line: string) => {
      trace.push(line)
    }
    const faults = makeFaultPlan(rng)
    const config = {
      alarmBackoffBase: rng.pick([20, 100]),
      alarmBackoffCap: rng.pick([400, 5_000]),
      wakeScanInterval: rng.pick([200, 1_000]),
      ownershipLeaseDuration: rng.pick([3_000, 30_000]),
      leaseRenewalInterval: 1_000,
      abortPollInterval: rng.pick([500, 2_000]),
    }
    log(`seed ${seed}: faults ${faults.describe()}; config ${JSON.stringify(config)}`)
    yield* TestClock.setTime(EPOCH)
    const world = yield* makeWorld({ config, faults, trace: log, verbose: options.verbose ?? false })
    const driver = makeDriver(world, rng, log, options.verbose ?? false)

    const status = () => {
      const record = readRecord(world.storage)
      const run = world.storage.run
      return `alarm=${world.storage.alarm === null ? "none" : world.storage.alarm - EPOCH} gen=${record?.dirty ?? "-"}/${record?.processed ?? "-"}${run === undefined ? "" : ` run=${run.id}`}${world.paused.length > 0 ? ` paused=${world.paused.length}` : ""}`
    }
    let steps = 0
    const step = (body: Effect.Effect<unknown>) =>
      Effect.gen(function* () {
        steps++
        log(`#${steps} t=${world.now() - EPOCH}`)
        yield* body
        yield* world.settle
        world.monitor.step()
        log(`   ${status()}`)
      })

    // Most runs are short; one in five goes deep.
    const [shortest, longest] = options.chaosSteps
    const chaosSteps = rng.chance(0.2)
      ? rng.int(Math.floor((shortest + longest) / 2), longest)
      : rng.int(shortest, Math.floor((shortest + 2 * longest) / 5))
    for (let index = 0; index < chaosSteps && world.monitor.violations.length === 0; index++) {
      yield* step(driver.chaosStep)
    }
    if (world.monitor.violations.length === 0) {
      log(`calm: no more faults`)
      faults.calm()
      yield* step(world.deployment === "full" ? world.evict("calm restart") : world.redeploy("full"))
      let converging = true
      for (
        let round = 0;
        round < options.calmRounds && converging && world.monitor.violations.length === 0;
        round++
      ) {
        yield* step(
          Effect.map(driver.calmStep, (more) => {
            converging = more
          }),
        )
      }
      if (world.monitor.violations.length === 0) {
        world.monitor.check(
          "liveness",
          !converging,
          () => `no quiescence after ${options.calmRounds} calm rounds`,
        )
        checkEndState(world, driver.label)
      }
    }
    return {
      seed,
      steps,
      checks: world.monitor.checks,
      violations: world.monitor.violations,
      trace,
      stats: {
        ...world.stats,
        selfCancellations: world.monitor.selfCancellations,
        takeovers: world.monitor.takeovers,
        plan: faults.describe(),
      },
      checksByKind: world.monitor.byKind,
    } satisfies RunReport
  })
