/**
 * Crash and restart across two Objects: a parent Object and its child Object (a second Object
 * of the same namespace). Each point arms `ctx.abort()` in the parent, the child or both, and
 * runs one scenario of subagents or joined input; the runner then goes through the same five
 * runtimes as the single-Object runner (crash, restart with alarms alone, inspect, complete,
 * inspect) and compares both Objects with a crash-free control pair.
 */
import { Effect, type Scope } from "effect"
import { chargeOf } from "../fixtures/crashAgents.ts"
import type { ArmEntry, CrashRecord, RawView } from "../fixtures/crashProtocol.ts"
import type { PairPoint, PairScenario, PairStep, Role } from "./crashPairPoints.ts"
import { type CrashDriver, crashDriver, type Envelope } from "./crashDriver.ts"
import {
  invariantViolations,
  linkViolations,
  normalizedHistory,
  statesOf,
  supplierCounts,
} from "./crashEvidence.ts"

/** One pair: a crash point, or the control of a scenario. */
interface PairRun {
  readonly label: string
  readonly scenario: PairScenario
  readonly point: PairPoint | undefined
  readonly names: Readonly<Record<Role, string>>
  readonly ids: Record<Role, string>
  readonly keys: Map<string, { readonly role: Role; readonly lane: string; submissionId?: string }>
  readonly failed: Array<PairStep>
  readonly crashes: Array<CrashRecord>
  /** Whether the peer of a `peerDies` point crashed at a failpoint hit (else the restart killed it). */
  peerCrashed: boolean
  /** The Objects that crashed and stayed down until the restart. */
  readonly down: Array<Role>
  mutatingBeforeRestart: Record<Role, number>
  phase1: Record<Role, RawView> | undefined
  phase2: Record<Role, RawView> | undefined
}

const roles: ReadonlyArray<Role> = ["parent", "child"]

const pointLabel = (point: PairPoint) =>
  [
    point.scenario.name,
    point.parent === undefined
      ? ""
      : `parent ${point.parent.location}${point.parent.match === undefined ? "" : ` ${point.parent.match}`}`,
    point.child === undefined
      ? ""
      : `child ${point.child.location}${point.child.match === undefined ? "" : ` ${point.child.match}`}`,
    point.peerDies === true ? "the other dies too" : "",
  ]
    .filter((part) => part !== "")
    .join(" / ")

const newRun = (label: string, scenario: PairScenario, point: PairPoint | undefined): PairRun => ({
  label,
  scenario,
  point,
  names: { parent: `${label} P`, child: `${label} C` },
  ids: { parent: "", child: "" },
  keys: new Map(),
  failed: [],
  crashes: [],
  peerCrashed: false,
  down: [],
  mutatingBeforeRestart: { parent: 0, child: 0 },
  phase1: undefined,
  phase2: undefined,
})

const deadline = (millis: number) => Date.now() + millis

/** Waits, reading only, until both Objects have no alarm and owe no maintenance. */
const settle = (driver: CrashDriver, run: PairRun) =>
  Effect.gen(function* () {
    const until = deadline(20_000)
    while (Date.now() < until) {
      let quiet = true
      for (const role of roles) {
        const answer = yield* driver.call("/inspect", { name: run.names[role] })
        const view = answer.ok ? (answer.value as { alarm: number | null; owed: boolean }) : undefined
        if (view === undefined || view.alarm !== null || view.owed) quiet = false
      }
      if (quiet) return
      yield* Effect.sleep(50)
    }
    return yield* Effect.die(new Error(`${run.label} did not settle within 20 s`))
  })

const execute = (driver: CrashDriver, run: PairRun, step: PairStep): Effect.Effect<Envelope | undefined> =>
  Effect.gen(function* () {
    const address = (key: string) => {
      const known = run.keys.get(key)
      return {
        name: run.names[known?.role ?? "parent"],
        lane: known?.lane ?? "",
        submissionId: known?.submissionId ?? "",
      }
    }
    switch (step.op) {
      case "settle":
        yield* settle(driver, run)
        return undefined
      case "submit": {
        const known = run.keys.get(step.key) ?? { role: "parent" as const, lane: step.lane }
        run.keys.set(step.key, known)
        const input =
          step.agentId === "delegate" ? { ...step.input, childObject: run.names.child } : step.input
        const answer = yield* driver.call("/submit", {
          name: run.names.parent,
          lane: step.lane,
          key: step.key,
          agentId: step.agentId,
          input,
          ...(step.mode === undefined ? {} : { mode: step.mode }),
        })
        if (answer.ok) known.submissionId = (answer.value as { submissionId: string }).submissionId
        return answer
      }
      case "approve":
        return yield* driver.call("/approve", { ...address(step.key), approved: step.approved, note: "ops" })
      case "abort":
        return yield* driver.call("/abort", address(step.key))
    }
  })

/** Phase 1: prefix, arm, the final call, and (for a point) every armed crash. */
const runToCrash = (driver: CrashDriver, run: PairRun) =>
  Effect.gen(function* () {
    for (const role of roles) run.ids[role] = yield* driver.id(run.names[role])
    for (const step of run.scenario.prefix) {
      const answer = yield* execute(driver, run, step)
      if (answer !== undefined && !answer.ok)
        return yield* Effect.die(new Error(`${run.label}: prefix ${step.op} failed: ${answer.error.message}`))
    }
    yield* settle(driver, run)
    const armed = roles.filter((role) => run.point?.[role] !== undefined)
    for (const role of armed) yield* driver.arm(run.names[role], [run.point?.[role] as ArmEntry])
    const peer = run.point?.peerDies === true ? roles.find((role) => !armed.includes(role)) : undefined
    if (peer !== undefined) {
      // The peer dies at its next failpoint hit of any kind once the first Object crashed.
      const first = run.ids[armed[0] as Role]
      yield* driver.arm(run.names[peer], [
        { kind: "any", location: "*", action: "crash", freeze: true, after: first },
      ])
    }
    const answer = yield* execute(driver, run, run.scenario.final)
    if (answer !== undefined && !answer.ok) run.failed.push(run.scenario.final)
    const until = deadline(40_000)
    while (armed.length > 0 && Date.now() < until) {
      const logs = yield* Effect.forEach(armed, (role) => driver.log(run.names[role]))
      if (logs.every((log) => log.pending === 0 && log.crashes.length > 0)) {
        run.crashes.push(...logs.flatMap((log) => log.crashes))
        run.down.push(...armed)
        break
      }
      yield* Effect.sleep(50)
    }
    // A peer with work left (a retry, its own head) reaches a failpoint within its backoff.
    const peerUntil = deadline(1_500)
    while (peer !== undefined && Date.now() < peerUntil) {
      const log = yield* driver.log(run.names[peer])
      if (log.crashes.length > 0) {
        run.crashes.push(...log.crashes)
        run.peerCrashed = true
        run.down.push(peer)
        return
      }
      yield* Effect.sleep(50)
    }
  })

/**
 * Waits until no alarm is delivered any more and every Object's last delivery cleared its
 * slot. An Object that crashed is down with its alarm pending until the restart, so it must
 * have been delivered one since; workerd delivers an overdue alarm about two seconds after a
 * restart, so an Object with no delivery at all is judged only after `quiet` ms.
 */
const awaitConvergence = (driver: CrashDriver, runs: ReadonlyArray<PairRun>, bootedAt: number) =>
  Effect.gen(function* () {
    const quiet = 5_000
    const until = deadline(45_000)
    while (Date.now() < until) {
      const signals = (yield* driver.signals).filter((signal) => signal.startedAt >= bootedAt)
      const converged = runs.every((run) =>
        roles.every((role) => {
          const last = signals.filter((signal) => signal.name === run.ids[role]).at(-1)
          if (last !== undefined) return last.ok && last.alarm === null
          return !run.down.includes(role) && Date.now() - bootedAt >= quiet
        }),
      )
      const latest = Math.max(bootedAt, ...signals.map((signal) => signal.finishedAt))
      if (converged && Date.now() - latest >= 2_500) return
      yield* Effect.sleep(100)
    }
  })

/** Phase 4: failed calls retried, then approvals until nothing waits in either Object. */
const complete = (driver: CrashDriver, run: PairRun) =>
  Effect.gen(function* () {
    for (const step of run.failed) yield* execute(driver, run, step)
    for (let round = 0; round < 6; round++) {
      yield* settle(driver, run)
      let waiting = 0
      for (const role of roles) {
        const view = yield* driver.raw(run.names[role])
        for (const row of view.submissions.filter((row) => row.state === "suspended")) {
          waiting++
          yield* driver.call("/approve", {
            name: run.names[role],
            lane: row.threadId,
            submissionId: row.submissionId,
            approved: true,
            note: "ops",
          })
        }
        for (const row of view.submissions.filter((row) => row.state === "unknown")) {
          waiting++
          const reference = `${row.threadId}/${row.submissionId}`
          const calls = yield* driver.supplier(run.names[role])
          if (!calls.some((call) => call.operation === "charge" && call.reference === reference))
            yield* driver.perform(run.names[role], "charge", reference)
          const amount = row.idempotencyKey.startsWith("parent:") ? 150 : 40
          yield* driver.call("/resolve", {
            name: run.names[role],
            lane: row.threadId,
            submissionId: row.submissionId,
            succeeded: true,
            value: chargeOf({ orderId: amount === 150 ? "o2" : "o1", amount }),
          })
        }
      }
      if (waiting === 0) return
    }
  })

const equal = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b)

/** A view with the pair's own Object names replaced by their roles, to compare with the control's. */
const anonymous = (run: PairRun, view: RawView): RawView =>
  JSON.parse(
    JSON.stringify(view)
      .replaceAll(JSON.stringify(run.names.child).slice(1, -1), "C")
      .replaceAll(JSON.stringify(run.names.parent).slice(1, -1), "P"),
  ) as RawView

/** What is wrong with a pair's evidence against its control's. */
const judge = (run: PairRun, control: PairRun): Array<string> => {
  const problems: Array<string> = []
  const armed = roles.filter((role) => run.point?.[role] !== undefined)
  const crashed = run.crashes.length - (run.peerCrashed ? 1 : 0)
  if (crashed < armed.length) return [`${armed.length - crashed} armed crash(es) never happened`]
  if (run.phase1 === undefined || run.phase2 === undefined || control.phase2 === undefined)
    return ["missing evidence"]
  for (const role of roles) {
    // After the restart, alarms alone brought both Objects to rest: nothing owed, nothing to send.
    problems.push(...invariantViolations(run.phase1[role]).map((p) => `after restart ${role}: ${p}`))
    problems.push(...invariantViolations(run.phase2[role]).map((p) => `final ${role}: ${p}`))
    if (!equal(statesOf(run.phase2[role]), statesOf(control.phase2[role])))
      problems.push(
        `final ${role} states ${JSON.stringify(statesOf(run.phase2[role]))} != control ${JSON.stringify(statesOf(control.phase2[role]))}`,
      )
    const history = normalizedHistory(anonymous(run, run.phase2[role]))
    const reference = normalizedHistory(anonymous(control, control.phase2[role]))
    for (const key of new Set([...Object.keys(history), ...Object.keys(reference)]))
      if (!equal(history[key], reference[key]))
        problems.push(
          `${role} ${key}: history ${JSON.stringify(history[key])} != control ${JSON.stringify(reference[key])}`,
        )
    if (!equal(supplierCounts(run.phase2[role], "charge"), supplierCounts(control.phase2[role], "charge")))
      problems.push(`${role}: charges differ from the control`)
  }
  problems.push(...linkViolations(run.phase2.parent, run.phase2.child))
  return problems
}

/** What the pair group found. */
export interface PairReport {
  readonly points: number
  readonly crashed: number
  readonly bothKilled: number
  /** The `peerDies` points whose peer crashed at a failpoint hit, not only with the restart. */
  readonly peerKilled: ReadonlyArray<string>
  readonly violations: ReadonlyArray<string>
  readonly timings: ReadonlyArray<string>
}

/** Runs every pair point, each in its own two Objects, beside a control pair per scenario. */
export const runPairGroup = (
  label: string,
  points: ReadonlyArray<PairPoint>,
): Effect.Effect<PairReport, never, Scope.Scope> =>
  Effect.gen(function* () {
    const driver = yield* crashDriver(label)
    const controls = new Map<string, PairRun>()
    for (const point of points)
      if (!controls.has(point.scenario.name))
        controls.set(point.scenario.name, newRun(`control ${point.scenario.name}`, point.scenario, undefined))
    const crashing = points.map((point) => newRun(pointLabel(point), point.scenario, point))
    const all = [...controls.values(), ...crashing]
    const each = <A>(f: (run: PairRun) => Effect.Effect<A>) =>
      Effect.forEach(all, f, { concurrency: 12, discard: true })
    const timings: Array<string> = []
    let mark = Date.now()
    const lap = (name: string) => {
      timings.push(`${name} ${Date.now() - mark}ms`)
      mark = Date.now()
    }

    yield* each((run) => runToCrash(driver, run))
    lap("crash")
    yield* each((run) =>
      Effect.forEach(roles, (role) =>
        Effect.map(driver.log(run.names[role]), (log) => {
          run.mutatingBeforeRestart[role] = log.calls.mutating
        }),
      ),
    )
    yield* driver.stop
    const bootedAt = Date.now()
    yield* driver.boot("normal")
    yield* awaitConvergence(driver, all, bootedAt)
    lap("restart and converge")
    yield* driver.boot("inspect")
    const inspect = (run: PairRun) =>
      Effect.map(
        Effect.all({ parent: driver.raw(run.names.parent), child: driver.raw(run.names.child) }),
        (views) => views as Record<Role, RawView>,
      )
    yield* each((run) =>
      Effect.map(inspect(run), (views) => {
        run.phase1 = views
      }),
    )
    yield* driver.boot("normal")
    yield* each((run) => complete(driver, run))
    lap("complete")
    yield* driver.boot("inspect")
    yield* each((run) =>
      Effect.map(inspect(run), (views) => {
        run.phase2 = views
      }),
    )
    yield* driver.stop
    lap("inspect")

    const violations: Array<string> = []
    for (const control of controls.values()) {
      for (const role of roles)
        for (const problem of invariantViolations((control.phase2 as Record<Role, RawView>)[role]))
          violations.push(`${control.label} ${role}: ${problem}`)
      const views = control.phase2 as Record<Role, RawView>
      for (const problem of linkViolations(views.parent, views.child))
        violations.push(`${control.label}: ${problem}`)
    }
    for (const run of crashing) {
      const control = controls.get(run.scenario.name) as PairRun
      for (const problem of judge(run, control)) violations.push(`${run.label}: ${problem}`)
    }
    return {
      points: crashing.length,
      crashed: crashing.filter((run) => run.crashes.length > 0).length,
      bothKilled: crashing.filter(
        (run) => run.point?.parent !== undefined && run.point.child !== undefined && run.crashes.length === 2,
      ).length,
      peerKilled: crashing.filter((run) => run.peerCrashed).map((run) => run.label),
      violations,
      timings,
    }
  })
