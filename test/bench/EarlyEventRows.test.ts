/**
 * Billed rows of an admission beside kept early events, in real workerd through the bench's
 * storage meter: the `submit` call alone (no pass runs), on a fresh Object per scenario, for an
 * ordinary agent and for a workflow's agent, with and without events kept for it
 * (`sendEventByKey` before the admission, not counted). Figures are printed; the test checks
 * that an ordinary admission costs the same whatever is kept, and what a workflow's adds.
 */
import { describe, expect, it } from "@effect/vitest"
import { env, runInDurableObject } from "cloudflare:test"
import { type Context, Effect, Exit } from "effect"
import { meterState } from "../../bench/worker/meter.ts"
import { objectCalls } from "../../src/internal/object/handlers.ts"
import { ThreadId } from "../../src/core/Identifiers.ts"
import { encodeDeferredExit, WORKFLOW_THREAD_ID, workflowAgentId } from "../../src/internal/workflow/codec.ts"
import * as ThreadWorkflowEngine from "../../src/ThreadWorkflowEngine.ts"
import { incarnation } from "../support/incarnation.ts"
import { echoAgent } from "../worker/threadObject.ts"
import { ApprovalWorkflow } from "../worker/workflowObject.ts"

const workflowAgent = ThreadWorkflowEngine.agent(ApprovalWorkflow)

interface Rows {
  readonly read: number
  readonly written: number
}

type Kept = "none" | "other key" | "this key"

/**
 * On a fresh Object: keeps what `kept` says, then admits two Submissions of `kind` (keys `a`,
 * then `b`), each measured: the first admission of an incarnation, then a later one.
 */
const measure = (kind: "ordinary" | "workflow", kept: Kept) =>
  Effect.promise(() =>
    runInDurableObject(env.BENCH_TEST.getByName(`early-rows-${crypto.randomUUID()}`), (_instance, state) => {
      const meter = meterState(state)
      return Effect.runPromise(
        Effect.scoped(
          Effect.gen(function* () {
            const built = yield* incarnation(meter.state, { agents: [echoAgent, workflowAgent] })
            const calls = objectCalls(undefined)
            const provide = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
              Effect.provide(effect, built.context as Context.Context<R>)
            const threadId = WORKFLOW_THREAD_ID
            const keep = (key: string) =>
              provide(
                calls.sendEventByKey({
                  threadId,
                  idempotencyKey: key,
                  agentId: workflowAgentId(ApprovalWorkflow._tag),
                  event: "workflow/deferred/approval",
                  eventId: "approval",
                  payload: encodeDeferredExit(Exit.succeed("kept")),
                }),
              )
            // What keeping costs: the first creates the table.
            meter.reset()
            if (kept === "other key") yield* keep("x")
            if (kept === "this key") yield* keep("a")
            const keptCounts = meter.snapshot()
            const keeping = {
              read: keptCounts.sqlRowsRead,
              written: keptCounts.sqlRowsWritten + keptCounts.kvPuts,
            }
            const admit = (key: string) =>
              Effect.gen(function* () {
                meter.reset()
                yield* provide(
                  kind === "ordinary"
                    ? calls.submit({
                        threadId,
                        agentId: echoAgent.id,
                        idempotencyKey: key,
                        input: { text: key },
                      })
                    : calls.submit({
                        threadId,
                        agentId: workflowAgent.id,
                        idempotencyKey: key,
                        input: { executionId: key, payload: { id: key } },
                      }),
                )
                const counts = meter.snapshot()
                return { read: counts.sqlRowsRead, written: counts.sqlRowsWritten + counts.kvPuts }
              })
            const first = yield* admit("a")
            const later = yield* admit("b")
            const history = yield* built.history.page(ThreadId.make(threadId), { limit: 100 })
            const received = history.records.filter((record) => record.entry._tag === "EventReceived").length
            return { keeping, first, later, received }
          }),
        ) as Effect.Effect<{
          readonly keeping: Rows
          readonly first: Rows
          readonly later: Rows
          readonly received: number
        }>,
      )
    }),
  )

describe("billed rows of an admission beside kept early events", () => {
  it.live("an ordinary admission pays nothing for them; a workflow's at most a one-row seek", () =>
    Effect.gen(function* () {
      const figures: Record<string, { keeping: Rows; first: Rows; later: Rows; received: number }> = {}
      for (const kind of ["ordinary", "workflow"] as const) {
        for (const kept of ["none", "other key", "this key"] as const) {
          figures[`${kind}, kept: ${kept}`] = yield* measure(kind, kept)
        }
      }
      console.log(JSON.stringify(figures))
      const ordinary = figures["ordinary, kept: none"]!
      // An ordinary admission runs no statement of the store, whatever it keeps.
      for (const kept of ["other key", "this key"]) {
        expect(figures[`ordinary, kept: ${kept}`]).toMatchObject({
          first: ordinary.first,
          later: ordinary.later,
        })
        expect(figures[`ordinary, kept: ${kept}`]!.received).toBe(0)
      }
      const none = figures["workflow, kept: none"]!
      // Nothing ever kept (no table): the same rows as an ordinary admission; asking the schema
      // whether the table exists bills no row.
      expect(none).toMatchObject({ first: ordinary.first, later: ordinary.later })
      // The table exists, nothing for this key: the same rows written, a seek of at most one row.
      const other = figures["workflow, kept: other key"]!
      expect(other.first.written).toBe(ordinary.first.written)
      expect(other.later.written).toBe(ordinary.later.written)
      expect(other.first.read - ordinary.first.read).toBeLessThanOrEqual(1)
      expect(other.later.read - ordinary.later.read).toBeLessThanOrEqual(1)
      // One kept: its record rides in the acceptance's history row; the kept row is removed and
      // its id enters the Submission's index of event ids, as any recorded event's does.
      const mine = figures["workflow, kept: this key"]!
      expect(mine.received).toBe(1)
      expect(mine.first.written - ordinary.first.written).toBe(2)
      expect(mine.later.written).toBe(ordinary.later.written)
    }),
  )
})
