/**
 * Seeded chaos over two crash-Worker Objects: one hosting several lanes of orders and of
 * delegating desks, the other the children those desks start, joined by a seeded faulty network
 * (requests and replies lost, requests duplicated, delayed and so reordered). Rounds of random
 * {kill either incarnation, wait for an alarm delivery, mutate, let time pass}, then
 * convergence, then a control pair that replays the same mutations in the same order with no
 * kill and a faultless network.
 *
 * Mutations are chosen so that their effect does not depend on timing: approvals, denials and
 * aborts target only Submissions that cannot move without them (a suspended one without an
 * accepted abort, or one queued behind such a head), as read-only status reads show. A
 * delegated order always needs an approval, which only the final operator gives, so a desk
 * waits for its child until then and an abort of it always reaches a waiting child. A mutating
 * call that fails (the kill hit it) is retried by the client until it gets a definite answer.
 */
import { Effect, Fiber } from "effect"
import type { NetworkStats, OrderInput, RawView } from "../fixtures/crashProtocol.ts"
import { chargeOf } from "../fixtures/crashAgents.ts"
import type { CrashDriver, Envelope } from "./crashDriver.ts"

/** mulberry32: a small seeded PRNG with a 32-bit state. */
export const mulberry32 = (seed: number) => {
  let state = seed >>> 0
  return (): number => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
  }
}

/** A mutation as applied, replayed in order by the control. */
export type Mutation =
  | {
      readonly op: "submit"
      readonly lane: string
      readonly key: string
      readonly input: OrderInput
      /** A delegating desk, whose child order runs in the children's Object. */
      readonly delegate?: boolean
    }
  | { readonly op: "approve"; readonly key: string; readonly approved: boolean; readonly note: string }
  | { readonly op: "abort"; readonly key: string }

/** What one chaos run did. */
export interface ChaosRun {
  readonly seed: number
  readonly rounds: number
  readonly kills: number
  readonly deliveries: number
  readonly sleeps: number
  readonly mutations: ReadonlyArray<Mutation>
  readonly retries: number
  /** What the network between the two Objects did to routed requests. */
  readonly network: NetworkStats
}

/** The network's fault rates: every routed request risks each fault. */
const networkFaults = { drop: 0.1, duplicate: 0.15, delay: 0.4 } as const

const sumStats = (stats: ReadonlyArray<NetworkStats | null>): NetworkStats => {
  const total = { received: 0, droppedRequests: 0, droppedReplies: 0, duplicated: 0, delayed: 0 }
  for (const one of stats)
    if (one !== null)
      for (const key of Object.keys(total) as Array<keyof NetworkStats>) total[key] += one[key]
  return total
}

interface Known {
  readonly lane: string
  readonly input: OrderInput
  submissionId: string
}

/** The Object that hosts the children of the Object `name`. */
export const childrenOf = (name: string) => `${name} children`

/** A client of one chaos Object that remembers Submission ids by key. */
const clientOf = (driver: CrashDriver, name: string) => {
  const known = new Map<string, Known>()
  let retries = 0

  /**
   * Calls until the answer is definite: a value or a typed refusal, not unavailability nor a
   * failure a failpoint injected (reason `internal`), which a retry gets past.
   */
  const definite = (path: string, body: Record<string, unknown>): Effect.Effect<Envelope> =>
    Effect.gen(function* () {
      for (let attempt = 0; attempt < 50; attempt++) {
        const answer = yield* driver.call(path, { name, ...body })
        if (answer.ok) return answer
        const { _tag, reason } = answer.error
        const injected = _tag === "ThreadObjectFailure" && reason === "internal"
        if (_tag !== "ThreadObjectUnavailable" && !injected) return answer
        retries += 1
        yield* Effect.sleep(20)
      }
      return yield* Effect.die(new Error(`${name}: ${path} stayed unavailable`))
    })

  const address = (key: string) => {
    const entry = known.get(key)
    return { lane: entry?.lane ?? "", submissionId: entry?.submissionId ?? "" }
  }

  const apply = (mutation: Mutation): Effect.Effect<Envelope> => {
    switch (mutation.op) {
      case "submit":
        return Effect.tap(
          definite("/submit", {
            lane: mutation.lane,
            key: mutation.key,
            ...(mutation.delegate === true
              ? { agentId: "delegate", input: { ...mutation.input, childObject: childrenOf(name) } }
              : { input: mutation.input }),
          }),
          (answer) =>
            Effect.sync(() => {
              if (!answer.ok)
                throw new Error(`${name}: submit ${mutation.key} refused: ${answer.error.message}`)
              const receipt = answer.value as { submissionId: string }
              known.set(mutation.key, {
                lane: mutation.lane,
                input: mutation.input,
                submissionId: receipt.submissionId,
              })
            }),
        )
      case "approve":
        return definite("/approve", {
          ...address(mutation.key),
          approved: mutation.approved,
          note: mutation.note,
        })
      case "abort":
        return definite("/abort", address(mutation.key))
    }
  }

  /** Whether a desk's child waits for its approval: only then is the desk's wait stable. */
  const childWaits = (key: string) =>
    Effect.gen(function* () {
      const input = known.get(key)?.input
      const thread = yield* driver.call("/thread", {
        name: childrenOf(name),
        lane: `orders-${input?.orderId}`,
      })
      const head = thread.ok ? (thread.value as { head?: { state: string } }).head : undefined
      return head?.state === "suspended"
    })

  /** The state of a Submission and of its lane's head, or undefined when unreadable now. */
  const observe = (key: string) =>
    Effect.gen(function* () {
      // A desk is a stable wait only once its child reached its approval wait.
      if (key.startsWith("d") && !(yield* childWaits(key))) return undefined
      const status = yield* driver.call("/status", { name, ...address(key) })
      const thread = yield* driver.call("/thread", { name, lane: known.get(key)?.lane ?? "" })
      if (!status.ok || !thread.ok) return undefined
      const row = status.value as { state: string; abortRequested: boolean }
      const head = (
        thread.value as { head?: { submissionId: string; state: string; abortRequested: boolean } }
      ).head
      // A suspended row with an accepted abort settles by itself: it is not a stable wait.
      const waits = (state: string, aborting: boolean) =>
        state === "suspended" && !aborting ? "waiting" : state
      return {
        state: waits(row.state, row.abortRequested),
        head: head === undefined ? undefined : { ...head, state: waits(head.state, head.abortRequested) },
      }
    })

  /** The operator's resolution of an Unknown Outcome, from the supplier's records. */
  const resolve = (key: string) =>
    Effect.gen(function* () {
      const entry = known.get(key)
      if (entry === undefined) return
      const reference = `${entry.lane}/${entry.submissionId}`
      const calls = yield* driver.supplier(name)
      if (!calls.some((call) => call.operation === "charge" && call.reference === reference))
        yield* driver.perform(name, "charge", reference)
      yield* definite("/resolve", { ...address(key), succeeded: true, value: chargeOf(entry.input) })
    })

  return { known, apply, observe, resolve, retries: () => retries }
}

/**
 * How long a routed request can still be on the faulty network after its sender went quiet: the
 * longest hold (2.5 s) or a background duplicate (0.5 s), and the call itself.
 */
const NETWORK_SETTLE_MILLIS = 3_000

/**
 * Waits, reading only, until the Object and its children's Object are quiescent and have stayed
 * so for `settleMillis` (before final reads: a request still held back by the faulty network
 * makes work when it arrives).
 */
const quiescent = (driver: CrashDriver, name: string, settleMillis = 0) =>
  Effect.gen(function* () {
    const until = Date.now() + 30_000
    let quietSince: number | undefined
    while (Date.now() < until) {
      let quiet = true
      for (const object of [name, childrenOf(name)]) {
        const answer = yield* driver.call("/inspect", { name: object })
        const view = answer.ok ? (answer.value as { alarm: number | null; owed: boolean }) : undefined
        if (view === undefined || view.alarm !== null || view.owed) quiet = false
      }
      if (!quiet) quietSince = undefined
      else if (quietSince === undefined) quietSince = Date.now()
      if (quietSince !== undefined && Date.now() - quietSince >= settleMillis) return
      yield* Effect.sleep(50)
    }
    return yield* Effect.die(new Error(`${name} did not reach quiescence within 30 s`))
  })

/** The final storage of both Objects. */
export interface ChaosViews {
  readonly main: RawView
  readonly children: RawView
}

/**
 * Drives the Object to the end: quiescence, then the operator approves every pending approval
 * and resolves every Unknown Outcome, until every Submission settled. Returns the final storage.
 */
const finish = (driver: CrashDriver, name: string, client: ReturnType<typeof clientOf>) =>
  Effect.gen(function* () {
    const children = childrenOf(name)
    for (let round = 0; round < 12; round++) {
      yield* quiescent(driver, name, NETWORK_SETTLE_MILLIS)
      const view = yield* driver.raw(name)
      const childView = yield* driver.raw(children)
      // A desk waits for its child: approve the children first, then what still waits here.
      const waitingChildren = childView.submissions.filter((row) => row.state === "suspended")
      for (const row of waitingChildren)
        yield* driver.call("/approve", {
          name: children,
          lane: row.threadId,
          submissionId: row.submissionId,
          approved: true,
          note: "final",
        })
      const waiting = view.submissions.filter(
        (row) => (row.state === "suspended" && !isDesk(row.idempotencyKey)) || row.state === "unknown",
      )
      if (waiting.length === 0 && waitingChildren.length === 0) {
        if (view.submissions.every((row) => row.state === "settled"))
          return { main: view, children: childView }
        continue
      }
      for (const row of waiting) {
        if (row.state === "suspended")
          yield* client.apply({ op: "approve", key: row.idempotencyKey, approved: true, note: "final" })
        else yield* client.resolve(row.idempotencyKey)
      }
    }
    return yield* Effect.die(new Error(`${name} still waits after 12 operator rounds`))
  })

/** Desks are submitted under keys that start with `d`. */
const isDesk = (key: string) => key.startsWith("d")

const lanes = ["a", "b", "c"]
const amounts = [40, 60, 150, 220]
/** Delegated orders always need an approval: their desks wait until the final operator. */
const delegated = [150, 220]

/** Runs `rounds` of seeded chaos on the Object `name`; returns what it did and the final storage. */
export const runChaos = (driver: CrashDriver, name: string, seed: number, rounds: number) =>
  Effect.gen(function* () {
    const random = mulberry32(seed)
    const pick = <A>(items: ReadonlyArray<A>): A => items[Math.floor(random() * items.length)] as A
    const client = clientOf(driver, name)
    const mutations: Array<Mutation> = []
    let kills = 0
    const lateKills: Array<Fiber.Fiber<void>> = []
    let deliveries = 0
    let sleeps = 0
    const id = yield* driver.id(name)
    // Routed requests between the two Objects cross a faulty network, both ways.
    for (const [index, object] of [name, childrenOf(name)].entries())
      yield* driver.network(object, { seed: seed * 2 + index, ...networkFaults })

    const mutate = (mutation: Mutation) =>
      Effect.tap(client.apply(mutation), () => Effect.sync(() => mutations.push(mutation)))

    for (let round = 0; round < rounds; round++) {
      const roll = random()
      if (roll < 0.15) {
        // Half of the kills land while the next rounds run: inside a mutation or a pass. One in
        // three kills the children's Object instead.
        const target = random() < 1 / 3 ? childrenOf(name) : name
        const delay = random() < 0.5 ? 0 : Math.floor(random() * 40)
        if (delay === 0) yield* driver.kill(target)
        else lateKills.push(yield* Effect.forkChild(Effect.andThen(Effect.sleep(delay), driver.kill(target))))
        kills += 1
      } else if (roll < 0.45) {
        // Deliver the alarm: wait for the next delivery to this Object (or give up after 300 ms).
        const seen = (yield* driver.signals).filter((signal) => signal.name === id).length
        const until = Date.now() + 300
        while (Date.now() < until) {
          if ((yield* driver.signals).filter((signal) => signal.name === id).length > seen) {
            deliveries += 1
            break
          }
          yield* Effect.sleep(10)
        }
      } else if (roll < 0.65 && client.known.size < 30) {
        const n = client.known.size + 1
        if (random() < 0.25) {
          // A desk in a lane of its own: it holds its lane while it waits for its child.
          yield* mutate({
            op: "submit",
            lane: `desk-${n}`,
            key: `d${n}`,
            input: { orderId: `o${n}`, amount: pick(delegated) },
            delegate: true,
          })
        } else {
          yield* mutate({
            op: "submit",
            lane: pick(lanes),
            key: `k${n}`,
            input: { orderId: `o${n}`, amount: pick(amounts) },
          })
        }
      } else if (roll < 0.85 && client.known.size > 0) {
        const key = pick([...client.known.keys()])
        const seen = yield* client.observe(key)
        if (seen === undefined) continue
        const isHead = seen.head?.submissionId === client.known.get(key)?.submissionId
        const dormant = !isHead && seen.state === "ready" && seen.head?.state === "waiting"
        const choice = random()
        // A desk waits for its child, not for an approval: it is only ever aborted.
        if (seen.state === "waiting" && choice < 0.7 && !isDesk(key))
          yield* mutate({ op: "approve", key, approved: choice < 0.45, note: `round ${round}` })
        else if (seen.state === "waiting" || dormant) yield* mutate({ op: "abort", key })
      } else {
        yield* Effect.sleep(5 + Math.floor(random() * 95))
        sleeps += 1
      }
    }
    // A late kill belongs to the rounds: it must not land on the final reads.
    yield* Fiber.joinAll(lateKills)
    const final = yield* finish(driver, name, client)
    const network = yield* Effect.forEach([name, childrenOf(name)], (object) => driver.network(object))
    const run: ChaosRun = {
      seed,
      rounds,
      kills,
      deliveries,
      sleeps,
      mutations,
      retries: client.retries(),
      network: sumStats(network),
    }
    return { run, final }
  })

/** Replays `mutations` on a fresh Object with no kill, each after the previous one settled. */
export const runControl = (driver: CrashDriver, name: string, mutations: ReadonlyArray<Mutation>) =>
  Effect.gen(function* () {
    const client = clientOf(driver, name)
    for (const mutation of mutations) {
      yield* client.apply(mutation)
      yield* quiescent(driver, name)
    }
    return yield* finish(driver, name, client) as Effect.Effect<ChaosViews>
  })
