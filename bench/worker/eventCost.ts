/**
 * The Worker of `bench/eventCost.ts`: one `ThreadObject` at the default configuration whose
 * `fetch` runs a loop of Submissions inside the Object (no request per Submission, so none of
 * Miniflare's entry layers is measured) and answers what the loop did.
 *
 * `GET /?mode=own&n=400` submits one Submission, waits for its settlement and then for the alarm
 * event that served it to end, `n` times: every Submission pays an event of its own.
 * `GET /?mode=shared&n=400&lanes=40` submits `lanes` Submissions to as many Threads, then waits
 * for all of them, `n / lanes` times: they share their events. `steps=S` gives each Submission S
 * journaled steps instead of one; `child=1` makes each Submission start a one-step child
 * Submission in another Object ("children") and await it, as a refund asks the fraud desk. The
 * answer counts the alarm deliveries of every Object of the isolate during the loop and, when the
 * Worker's `COUNT_CALLS` binding is "1", their storage calls (a wrapper on each Object's storage,
 * installed before the library sees it; zeros otherwise). `GET /?mode=raw&n=400` runs the anchor
 * instead, a plain Object that does the least for an item with an alarm of its own
 * (bench/worker/eventCostRaw.ts).
 */
import { Effect, Schema } from "effect"
import { define } from "../../src/core/AgentRegistration.ts"
import * as ThreadObject from "../../src/ThreadObject.ts"
import { EventCostCalls, type EventCostReport } from "./report.ts"
import type { EventCostRawObject } from "./eventCostRaw.ts"
import { alarms, eventsOver, tracked, zeroCalls } from "./eventCostIsolate.ts"

export { EventCostRawObject } from "./eventCostRaw.ts"

/** A loop's Submission: its number and how many steps it (or its child) journals. */
const LoopInput = Schema.Struct({ n: Schema.Int, steps: Schema.Int })

/** S journaled async no-op steps, then the Submission settles with their sum. */
const stepsAgent = define({
  id: "bench-event-cost",
  version: "1",
  input: LoopInput,
  output: Schema.Int,
  program: ({ n, steps }, ctx) =>
    Effect.gen(function* () {
      let total = 0
      for (let index = 0; index < steps; index++)
        total += yield* ctx.step(
          `step ${index}`,
          Effect.promise(() => Promise.resolve(n)),
        )
      return total
    }),
})

/** Starts one child Submission (one step) in another Object of this class and awaits its output. */
const parentAgent = define({
  id: "bench-event-cost-parent",
  version: "1",
  input: LoopInput,
  output: Schema.Int,
  program: (input, ctx) =>
    Effect.gen(function* () {
      const child = yield* ctx.startChild({
        agent: stepsAgent,
        input,
        thread: { objectName: "children", threadId: `child-of-${ctx.threadId}` },
      })
      const settled = yield* ctx.awaitChild(child)
      return settled.outcome === "completed" ? settled.output : -1
    }),
})

type CallName = keyof typeof EventCostCalls.fields

/**
 * Where each counted storage call lives: a part of the storage (or the storage itself) and a
 * method. Counted here rather than with the bench's storage meter (bench/worker/meter.ts): the
 * meter reads `total_changes()` at each reset and snapshot, I/O on its own Object's storage, and
 * the loop's Object sums the counts of the children's Object too.
 */
const countedCalls: Readonly<Record<CallName, readonly [string | undefined, string]>> = {
  exec: ["sql", "exec"],
  transactionSync: [undefined, "transactionSync"],
  getAlarm: [undefined, "getAlarm"],
  setAlarm: [undefined, "setAlarm"],
  deleteAlarm: [undefined, "deleteAlarm"],
  kvGet: ["kv", "get"],
  kvPut: ["kv", "put"],
}

/** The storage calls of every Object of this isolate: the loop's Objects and the children's. */
const isolate = { calls: zeroCalls() }

/** Wraps each counted method of `storage` in place, counting into the isolate's counts. */
const countCalls = (storage: DurableObjectStorage): void => {
  for (const [name, [part, method]] of Object.entries(countedCalls) as Array<
    [CallName, readonly [string | undefined, string]]
  >) {
    const target = (
      part === undefined ? storage : (storage as unknown as Record<string, object>)[part]
    ) as Record<string, (...args: ReadonlyArray<unknown>) => unknown>
    const original = target[method]!.bind(target)
    target[method] = (...args) => {
      isolate.calls[name] += 1
      return original(...args)
    }
  }
}

let nextKey = 0

export class EventCostObject extends ThreadObject.make(ThreadObject.layer([stepsAgent, parentAgent]), {
  namespaceBinding: "EVENT_COST",
}) {
  constructor(ctx: DurableObjectState, env: { readonly COUNT_CALLS?: string }) {
    // Only in the runtime that counts: the wrapper's own cost stays out of the timed runs.
    if (env.COUNT_CALLS === "1") countCalls(ctx.storage)
    super(ctx, env as never)
  }

  override async alarm(): Promise<void> {
    await tracked(super.alarm?.() ?? Promise.resolve())
  }

  async #submitAndAwait(lanes: number, steps: number, n: number, child: boolean): Promise<void> {
    const submitted: Array<readonly [string, string]> = []
    for (let lane = 0; lane < lanes; lane++) {
      const threadId = `lane-${lane}`
      const result = await this.submit({
        threadId,
        agentId: child ? parentAgent.id : stepsAgent.id,
        idempotencyKey: `item-${nextKey++}`,
        input: { n, steps },
      })
      if (!result.ok) throw new Error(`submit refused: ${JSON.stringify(result.error)}`)
      submitted.push([threadId, (result.value as { submissionId: string }).submissionId])
    }
    for (const [threadId, submissionId] of submitted) {
      const settled = await this.awaitSettlement({ threadId, submissionId, timeoutMillis: 60_000 })
      if (!settled.ok) throw new Error(`not settled: ${JSON.stringify(settled.error)}`)
    }
  }

  override async fetch(request: Request): Promise<Response> {
    const query = new URL(request.url).searchParams
    const mode = query.get("mode")
    const n = Number(query.get("n") ?? "400")
    const lanes = mode === "own" ? 1 : Number(query.get("lanes") ?? "40")
    const steps = Number(query.get("steps") ?? "1")
    const child = query.get("child") === "1"
    if (
      (mode !== "own" && mode !== "shared") ||
      ![n, lanes, steps].every((v) => Number.isInteger(v) && v > 0)
    )
      return Response.json(
        { error: "mode must be own or shared; n, lanes and steps positive integers" },
        { status: 400 },
      )
    await eventsOver()
    for (const name of Object.keys(isolate.calls) as Array<CallName>) isolate.calls[name] = 0
    const deliveries = alarms.deliveries
    const rounds = Math.ceil(n / lanes)
    for (let round = 0; round < rounds; round++) {
      await this.#submitAndAwait(lanes, steps, round, child)
      if (mode === "own") await eventsOver()
    }
    await eventsOver()
    return Response.json({
      submissions: rounds * lanes,
      deliveries: alarms.deliveries - deliveries,
      calls: { ...isolate.calls },
    } satisfies EventCostReport)
  }
}

export default {
  fetch: (
    request: Request,
    env: {
      readonly EVENT_COST: DurableObjectNamespace<EventCostObject>
      readonly EVENT_COST_RAW: DurableObjectNamespace<EventCostRawObject>
    },
  ) => {
    const query = new URL(request.url).searchParams
    // The anchor (bench/worker/eventCostRaw.ts) runs in a plain Object of its own class.
    const namespace = query.get("mode") === "raw" ? env.EVENT_COST_RAW : env.EVENT_COST
    return namespace.getByName(query.get("object") ?? "bench").fetch(request)
  },
}
