/**
 * Runs a group of crash points in one crash Worker, one Object per point plus one crash-free
 * control Object per scenario, through five runtimes over the same persist folder:
 *
 * 1. normal: each point runs its prefix, arms its crash, makes its one final client call, and
 *    the test waits until the crash log shows the hit (the incarnation called `ctx.abort()`);
 * 2. normal again (a restart): no request at all; alarm signals alone show convergence;
 * 3. inspect: storage read as left (phase-1 evidence);
 * 4. normal: the client retries its failed call, the operator approves pending approvals and
 *    resolves Unknown Outcomes from the supplier's records; alarms converge again;
 * 5. inspect: final evidence, compared with the control's.
 *
 * `CRASH_DUMP=<path prefix>` writes every Object's runs, signals and views as JSON.
 */
import { Effect, type Scope } from "effect"
import { writeFile } from "node:fs/promises"
import { chargeOf, courierEvent } from "../fixtures/crashAgents.ts"
import type { AlarmSignal, ArmEntry, CrashRecord, OrderInput, RawView } from "../fixtures/crashProtocol.ts"
import { type CrashDriver, crashDriver, type CrashOptions, type Envelope } from "./crashDriver.ts"
import {
  invariantViolations,
  normalizedHistory,
  statesOf,
  supplierCounts,
  unknownOutcomes,
} from "./crashEvidence.ts"
import { type CrashPoint, pointName, type Scenario, type Step } from "./crashPoints.ts"

/** One Object of the group: a crash point, or the control of a scenario. */
interface ObjectRun {
  readonly name: string
  readonly scenario: Scenario
  readonly point: CrashPoint | undefined
  readonly keys: Map<string, { readonly lane: string; readonly input: OrderInput; submissionId?: string }>
  /** Client steps that did not succeed; the client retries them after convergence. */
  readonly failed: Array<Step>
  /** States at the end of the prefix. */
  before: Record<string, string>
  id: string
  /** When the crash hit (or the final call returned, for a control). */
  since: number
  crash: CrashRecord | undefined
  /** Mutating client calls the Object had received when the crash log was read before the restart. */
  mutatingBeforeRestart: number
  /** Whether each retried submit was answered as a replay. */
  readonly replays: Record<string, boolean>
  phase1: RawView | undefined
  phase2: RawView | undefined
  startedAt: number
}

/** What a group run found. */
export interface GroupReport {
  readonly points: number
  readonly crashed: number
  readonly restarts: number
  /** Alarm deliveries in the restarted runtime before any request reached it. */
  readonly deliveriesWithoutRequest: number
  readonly violations: ReadonlyArray<string>
  /** Locations of the group's kind that no point arms. */
  readonly uncovered: ReadonlyArray<string>
  /** Wall time of each phase. */
  readonly timings: ReadonlyArray<string>
}

const deadline = (millis: number) => Date.now() + millis

const sleep = (millis: number) => Effect.sleep(millis)

/** Runs one client step of `run`; a failed client call is remembered for the retry phase. */
const execute = (driver: CrashDriver, run: ObjectRun, step: Step): Effect.Effect<Envelope | undefined> =>
  Effect.gen(function* () {
    const name = run.name
    const address = (key: string) => {
      const known = run.keys.get(key)
      return { name, lane: known?.lane ?? "", submissionId: known?.submissionId ?? "" }
    }
    switch (step.op) {
      case "arm":
        yield* driver.arm(name, step.entries)
        return undefined
      case "settle":
        yield* settle(driver, name)
        return undefined
      case "damage":
        yield* driver.call("/damage", { name })
        return undefined
      case "repair":
        return yield* driver.call("/repair", { name, lane: "a" })
      case "submit": {
        const known = run.keys.get(step.key) ?? { lane: step.lane, input: step.input }
        run.keys.set(step.key, known)
        const answer = yield* driver.call("/submit", {
          name,
          lane: step.lane,
          key: step.key,
          input: step.input,
          ...(step.agentId === undefined ? {} : { agentId: step.agentId }),
        })
        if (answer.ok) known.submissionId = (answer.value as { submissionId: string }).submissionId
        return answer
      }
      case "approve":
        return yield* driver.call("/approve", {
          ...address(step.key),
          approved: step.approved,
          note: step.note,
        })
      case "abort":
        return yield* driver.call("/abort", address(step.key))
      case "event":
        return yield* driver.call("/event", {
          ...address(step.key),
          event: courierEvent,
          eventId: step.eventId,
          payload: step.courier,
        })
      case "resolve": {
        const target = address(step.key)
        const input = run.keys.get(step.key)?.input
        if (input === undefined) return yield* Effect.die(new Error(`no input for ${step.key}`))
        const reference = `${target.lane}/${target.submissionId}`
        const calls = yield* driver.supplier(name)
        // The operator charges by hand when the supplier has no record of the charge.
        if (!calls.some((call) => call.operation === "charge" && call.reference === reference))
          yield* driver.perform(name, "charge", reference)
        return yield* driver.call("/resolve", { ...target, succeeded: true, value: chargeOf(input) })
      }
    }
  })

/**
 * Waits, reading only, until the Object's alarm is cleared and no maintenance is owed (or its
 * record is damaged: then nothing runs until a repair).
 */
const settle = (driver: CrashDriver, name: string) =>
  Effect.gen(function* () {
    const until = deadline(20_000)
    while (Date.now() < until) {
      const answer = yield* driver.call("/inspect", { name })
      if (answer.ok) {
        const view = answer.value as { alarm: number | null; owed: boolean; damage?: unknown }
        if (view.alarm === null && (!view.owed || view.damage !== undefined)) return
      }
      yield* sleep(50)
    }
    return yield* Effect.die(new Error(`${name} did not settle within 20 s`))
  })

const newRun = (name: string, scenario: Scenario, point: CrashPoint | undefined): ObjectRun => ({
  name,
  scenario,
  point,
  keys: new Map(),
  failed: [],
  before: {},
  id: "",
  since: 0,
  crash: undefined,
  mutatingBeforeRestart: 0,
  replays: {},
  phase1: undefined,
  phase2: undefined,
  startedAt: 0,
})

const targetEntry = (point: CrashPoint): ArmEntry => ({
  kind: point.kind,
  location: point.location,
  action: "crash",
  freeze: true,
  ...(point.match === undefined ? {} : { match: point.match }),
  ...(point.skip === undefined ? {} : { skip: point.skip }),
})

/** Phase 1 for one Object: prefix, arm, the final call, and (for a point) the crash. */
const runToCrash = (driver: CrashDriver, run: ObjectRun) =>
  Effect.gen(function* () {
    run.startedAt = Date.now()
    run.id = yield* driver.id(run.name)
    for (const step of run.scenario.prefix) {
      const answer = yield* execute(driver, run, step)
      if (answer !== undefined && !answer.ok)
        return yield* Effect.die(new Error(`${run.name}: prefix ${step.op} failed: ${answer.error.message}`))
    }
    // A fresh Object's first alarm (the bootstrap generation) must not consume the armed crash.
    yield* settle(driver, run.name)
    run.before = statesOf(yield* driver.raw(run.name))
    const entries = [...run.scenario.before, ...(run.point === undefined ? [] : [targetEntry(run.point)])]
    if (entries.length > 0) yield* driver.arm(run.name, entries)
    const answer = yield* execute(driver, run, run.scenario.final)
    if (answer !== undefined && !answer.ok) run.failed.push(run.scenario.final)
    if (run.point === undefined) {
      run.since = Date.now()
      return
    }
    // Generous: on a loaded machine a crash behind a lease expiry and a backoff takes a while,
    // and waiting longer never weakens the check.
    const until = deadline(40_000)
    while (Date.now() < until) {
      const log = yield* driver.log(run.name)
      const hit = log.crashes.find(
        (crash) =>
          crash.kind === run.point?.kind && crash.location === run.point.location && log.pending === 0,
      )
      if (hit !== undefined) {
        run.crash = hit
        run.since = hit.at
        return
      }
      yield* sleep(50)
    }
  })

/**
 * Waits until every Object's last alarm after its crash cleared the slot; an Object with no
 * delivery since is left to the inspection once nothing arrived for `quiet` ms after the boot.
 */
const awaitConvergence = (
  driver: CrashDriver,
  runs: ReadonlyArray<ObjectRun>,
  bootedAt: number,
  readyAt: number,
) =>
  Effect.gen(function* () {
    // Generous: with another suite's workerd starting beside it, the restarted runtime's first
    // deliveries came later than 2.5 s (an Object then looked quiet with its alarm still due).
    const quiet = 6_000
    const until = deadline(30_000)
    while (Date.now() < until) {
      const signals = yield* driver.signals
      // A crashed Object is down until the restart, so only the restarted runtime's deliveries
      // count for it (workerd's clock, frozen between I/O, makes crash times too coarse).
      const lastOf = (run: ObjectRun) =>
        signals
          .filter(
            (signal) =>
              signal.name === run.id && signal.startedAt >= (run.point === undefined ? run.since : bootedAt),
          )
          .at(-1)
      const converged = runs.every((run) => {
        const last = lastOf(run)
        return last === undefined ? Date.now() - readyAt >= quiet : last.ok && last.alarm === null
      })
      const latest = Math.max(readyAt, ...signals.map((signal) => signal.finishedAt))
      if (converged && Date.now() - latest >= 300) return
      yield* sleep(100)
    }
  })

/** Phase 4 for one Object: retries, approvals and resolutions until nothing waits. */
const complete = (driver: CrashDriver, run: ObjectRun) =>
  Effect.gen(function* () {
    for (const step of run.failed) {
      const answer = yield* execute(driver, run, step)
      if (step.op === "submit" && answer?.ok === true)
        run.replays[step.key] = (answer.value as { replayed: boolean }).replayed
    }
    for (let round = 0; round < 4; round++) {
      yield* settle(driver, run.name)
      const view = yield* driver.raw(run.name)
      const waiting = view.submissions.filter((row) => row.state === "suspended" || row.state === "unknown")
      if (waiting.length === 0) return
      for (const row of waiting) {
        const known = run.keys.get(row.idempotencyKey)
        if (known !== undefined) known.submissionId = row.submissionId
        yield* execute(
          driver,
          run,
          row.state === "suspended"
            ? { op: "approve", key: row.idempotencyKey, approved: true, note: "ops" }
            : { op: "resolve", key: row.idempotencyKey },
        )
      }
    }
  })

const forEachRun = <A>(runs: ReadonlyArray<ObjectRun>, f: (run: ObjectRun) => Effect.Effect<A>) =>
  Effect.forEach(runs, f, { concurrency: 16, discard: true })

const equal = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b)

/** What is wrong with a point's evidence against its control's. */
const judge = (run: ObjectRun, control: ObjectRun, delivered: ReadonlyArray<AlarmSignal>): Array<string> => {
  const problems: Array<string> = []
  const { phase1, phase2 } = run
  if (run.crash === undefined) return ["the crash never happened"]
  if (
    phase1 === undefined ||
    phase2 === undefined ||
    control.phase1 === undefined ||
    control.phase2 === undefined
  )
    return ["missing evidence"]
  if (run.mutatingBeforeRestart !== run.crash.mutatingCalls)
    problems.push(`client calls after the crash: ${run.mutatingBeforeRestart - run.crash.mutatingCalls}`)
  for (const signal of delivered.filter((s) => s.name === run.id))
    if (signal.calls.mutating + signal.calls.readOnly > 0)
      problems.push("a request reached the restarted runtime")

  problems.push(...invariantViolations(phase1).map((p) => `after restart: ${p}`))
  const expected = statesOf(control.phase1)
  const actual = statesOf(phase1)
  // A failed final call leaves the client unsure whether it applied: before or after it is fine.
  const finalFailed = run.failed.length > 0
  const final = run.scenario.final
  for (const [key, state] of Object.entries(expected)) {
    const got = actual[key]
    const idempotencyKey = key.split("/")[1]
    if (run.point?.unknown === true && idempotencyKey === "k1") {
      if (got !== "unknown") problems.push(`${key}: ${got ?? "absent"}, expected an Unknown Outcome`)
      continue
    }
    if (got === state) continue
    const unacknowledged = final.op === "submit" && final.key === idempotencyKey
    if (got === undefined && finalFailed && unacknowledged) continue
    if (finalFailed && got === run.before[key]) continue
    problems.push(`${key}: ${got ?? "absent"} after restart, control ${state}`)
  }
  const extraUnknown = unknownOutcomes(phase1) - unknownOutcomes(control.phase1)
  if (extraUnknown !== (run.point?.unknown === true ? 1 : 0))
    problems.push(`${extraUnknown} Unknown Outcomes more than the control`)

  problems.push(...invariantViolations(phase2).map((p) => `final: ${p}`))
  if (!equal(statesOf(phase2), statesOf(control.phase2)))
    problems.push(
      `final states ${JSON.stringify(statesOf(phase2))} != control ${JSON.stringify(statesOf(control.phase2))}`,
    )
  const history = normalizedHistory(phase2)
  const reference = normalizedHistory(control.phase2)
  for (const key of new Set([...Object.keys(history), ...Object.keys(reference)])) {
    if (!equal(history[key], reference[key]))
      problems.push(
        `${key}: history ${JSON.stringify(history[key])} != control ${JSON.stringify(reference[key])}`,
      )
  }
  if (!equal(supplierCounts(phase2, "charge"), supplierCounts(control.phase2, "charge")))
    problems.push(
      `charges ${JSON.stringify(supplierCounts(phase2, "charge"))} != control ${JSON.stringify(supplierCounts(control.phase2, "charge"))}`,
    )
  for (const [key, replayed] of Object.entries(run.replays)) {
    const present = Object.keys(actual).includes(`${run.keys.get(key)?.lane}/${key}`)
    if (replayed !== present)
      problems.push(`${key}: retried submit replayed=${replayed}, accepted before=${present}`)
  }
  return problems
}

/** Runs `points` as one group; `label` names the persist folder. */
export const runCrashGroup = (
  label: string,
  kind: "maintenance" | "runtime" | "storage",
  points: ReadonlyArray<CrashPoint>,
  options: CrashOptions = {},
): Effect.Effect<GroupReport, never, Scope.Scope> =>
  Effect.gen(function* () {
    const driver = yield* crashDriver(label, options)
    const armed = new Set(points.map((point) => point.location))
    const uncovered = (yield* driver.locations)[kind].filter((location) => !armed.has(location))
    const controls = new Map<string, ObjectRun>()
    for (const point of points)
      if (!controls.has(point.scenario.name))
        controls.set(point.scenario.name, newRun(`control ${point.scenario.name}`, point.scenario, undefined))
    const crashing = points.map((point) => newRun(pointName(point), point.scenario, point))
    const all = [...controls.values(), ...crashing]

    const timings: Array<string> = []
    let mark = Date.now()
    const lap = (name: string) => {
      timings.push(`${name} ${Date.now() - mark}ms`)
      mark = Date.now()
    }
    yield* forEachRun(all, (run) => runToCrash(driver, run))
    lap("crash")
    yield* forEachRun(all, (run) =>
      Effect.map(driver.log(run.name), (log) => {
        run.mutatingBeforeRestart = log.calls.mutating
      }),
    )

    yield* driver.stop
    // The restarted runtime may deliver overdue alarms before its boot returns.
    const bootedAt = Date.now()
    yield* driver.boot("normal")
    lap("restart")
    yield* awaitConvergence(driver, all, bootedAt, Date.now())
    lap("converge")
    yield* driver.boot("inspect")
    const delivered = (yield* driver.signals).filter((signal) => signal.startedAt >= bootedAt)
    yield* forEachRun(all, (run) =>
      Effect.map(driver.raw(run.name), (view) => {
        run.phase1 = view
      }),
    )

    yield* driver.boot("normal")
    lap("inspect")
    yield* forEachRun(all, (run) => complete(driver, run))
    lap("complete")
    yield* driver.boot("inspect")
    yield* forEachRun(all, (run) =>
      Effect.map(driver.raw(run.name), (view) => {
        run.phase2 = view
      }),
    )
    yield* driver.stop
    lap("inspect")
    const dump = process.env["CRASH_DUMP"]
    if (dump !== undefined && dump !== "") {
      const signals = yield* driver.signals
      yield* Effect.promise(() =>
        writeFile(
          `${dump}-${label}.json`,
          JSON.stringify(
            { bootedAt, signals, runs: all },
            (_key, value: unknown) => (value instanceof Map ? Object.fromEntries(value) : value),
            2,
          ),
        ),
      )
    }

    const violations: Array<string> = []
    for (const control of controls.values()) {
      for (const problem of [
        ...invariantViolations(control.phase1 as RawView).map((p) => `after restart: ${p}`),
        ...invariantViolations(control.phase2 as RawView).map((p) => `final: ${p}`),
      ])
        violations.push(`${control.name}: ${problem}`)
    }
    for (const run of crashing) {
      const control = controls.get(run.scenario.name) as ObjectRun
      for (const problem of judge(run, control, delivered)) violations.push(`${run.name}: ${problem}`)
    }
    return {
      points: crashing.length,
      crashed: crashing.filter((run) => run.crash !== undefined).length,
      restarts: 4,
      deliveriesWithoutRequest: delivered.filter((s) => s.calls.mutating + s.calls.readOnly === 0).length,
      violations,
      uncovered,
      timings,
    }
  })
