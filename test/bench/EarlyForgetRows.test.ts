/**
 * Billed rows of removing kept early events, in real workerd through the bench's storage meter,
 * on a fresh Object per scenario: `forget` of the id an execution not yet started will have (its
 * kept completions removed), and `forget` of a settled Submission in an Object that never kept
 * one, that keeps one under another key, and that keeps one under its own key (another agent's).
 * Figures are printed; the test checks what each removal adds.
 */
import { describe, expect, it } from "@effect/vitest"
import { env, runInDurableObject } from "cloudflare:test"
import { type Context, Effect, Exit } from "effect"
import { meterState } from "../../bench/worker/meter.ts"
import { objectCalls } from "../../src/internal/object/handlers.ts"
import { SubmissionId } from "../../src/core/Identifiers.ts"
import { encodeDeferredExit, WORKFLOW_THREAD_ID, workflowAgentId } from "../../src/internal/workflow/codec.ts"
import { incarnation } from "../support/incarnation.ts"
import { echoAgent } from "../worker/threadObject.ts"

interface Rows {
  readonly read: number
  readonly written: number
}

type Scenario =
  | "unstarted, 3 kept"
  | "settled, none ever kept"
  | "settled, kept under another key"
  | "settled, kept under its key"

const measure = (scenario: Scenario) =>
  Effect.promise(() =>
    runInDurableObject(
      env.BENCH_TEST.getByName(`early-forget-${crypto.randomUUID()}`),
      (_instance, state) => {
        const meter = meterState(state)
        return Effect.runPromise(
          Effect.scoped(
            Effect.gen(function* () {
              const built = yield* incarnation(meter.state, { agents: [echoAgent] })
              const calls = objectCalls(undefined)
              const provide = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
                Effect.provide(effect, built.context as Context.Context<R>)
              const threadId = WORKFLOW_THREAD_ID
              const keep = (key: string, eventId: string, agent = "Approval") =>
                provide(
                  calls.sendEventByKey({
                    threadId,
                    idempotencyKey: key,
                    agentId: workflowAgentId(agent),
                    event: `workflow/deferred/${eventId}`,
                    eventId,
                    payload: encodeDeferredExit(Exit.succeed("kept")),
                  }),
                )
              let target: string
              if (scenario === "unstarted, 3 kept") {
                for (const id of ["a", "b", "c"]) yield* keep("x", id)
                target = (yield* built.ledger.earlyEvents).keys[0]!.submissionId
              } else {
                if (scenario === "settled, kept under another key") yield* keep("other", "a")
                if (scenario === "settled, kept under its key") yield* keep("x", "a", "Notifier")
                const receipt = yield* provide(
                  calls.submit({
                    threadId,
                    agentId: echoAgent.id,
                    idempotencyKey: "x",
                    input: { text: "x" },
                  }),
                )
                yield* built.maintenance.pass
                target = receipt.submissionId
              }
              // The operator view's first page, beside what is kept.
              meter.reset()
              yield* provide(calls.threadPage({ threadId }))
              const viewed = meter.snapshot()
              meter.reset()
              yield* provide(calls.forget({ threadId, submissionId: SubmissionId.make(target) }))
              const counts = meter.snapshot()
              const left = (yield* built.ledger.earlyEvents).keys.filter((key) => key.idempotencyKey === "x")
              return {
                rows: { read: counts.sqlRowsRead, written: counts.sqlRowsWritten + counts.kvPuts },
                page: { read: viewed.sqlRowsRead, written: viewed.sqlRowsWritten + viewed.kvPuts },
                left: left.length,
                found: yield* built.ledger.lookup(SubmissionId.make(target)),
              }
            }),
          ) as Effect.Effect<{
            readonly rows: Rows
            readonly page: Rows
            readonly left: number
            readonly found: unknown
          }>,
        )
      },
    ),
  )

describe("billed rows of removing kept early events", () => {
  it.live("forget removes one row per kept completion; a settled forget pays for its key's only", () =>
    Effect.gen(function* () {
      const figures: Record<string, { rows: Rows; page: Rows; left: number }> = {}
      for (const scenario of [
        "unstarted, 3 kept",
        "settled, none ever kept",
        "settled, kept under another key",
        "settled, kept under its key",
      ] as const) {
        const measured = yield* measure(scenario)
        expect(measured.found).toMatchObject({ _tag: "None" })
        figures[scenario] = { rows: measured.rows, page: measured.page, left: measured.left }
      }
      console.log(JSON.stringify(figures))
      // The three kept rows, removed: nothing else is written.
      expect(figures["unstarted, 3 kept"]).toMatchObject({ rows: { written: 3 }, left: 0 })
      const none = figures["settled, none ever kept"]!
      // A table with nothing under the key: the same rows written.
      expect(figures["settled, kept under another key"]!.rows.written).toBe(none.rows.written)
      // The first page reads the kept rows' keys (grouped by key and agent: a row read to sort it,
      // once more to group it): nothing more while none was ever kept; it writes nothing.
      expect(figures["settled, kept under another key"]!.page.read - none.page.read).toBeLessThanOrEqual(2)
      for (const figure of Object.values(figures)) expect(figure.page.written).toBe(0)
      // One kept under its key: removed with it, one row more.
      expect(figures["settled, kept under its key"]).toMatchObject({
        rows: { written: none.rows.written + 1 },
        left: 0,
      })
    }),
  )
})
