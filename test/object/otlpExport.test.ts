import { env, runDurableObjectAlarm } from "cloudflare:test"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { runAlarmsUntilQuiet } from "../../src/Testing.ts"
import * as ThreadClient from "../../src/ThreadClient.ts"
import { exportedTraces } from "../worker/tracedObject.ts"

interface OtlpSpan {
  readonly name: string
  readonly attributes: ReadonlyArray<{ readonly key: string; readonly value: Record<string, unknown> }>
}

const exportedSpans = (): ReadonlyArray<OtlpSpan> =>
  exportedTraces.flatMap((body) =>
    (
      body as { resourceSpans: Array<{ scopeSpans: Array<{ spans: Array<OtlpSpan> }> }> }
    ).resourceSpans.flatMap((resource) => resource.scopeSpans.flatMap((scope) => scope.spans)),
  )

describe("OTLP export", () => {
  it.live("exports the Object's spans when the application layer provides Effect's OTLP tracer", () =>
    Effect.gen(function* () {
      const thread = `traced-${crypto.randomUUID()}`
      const client = ThreadClient.make(env.THREADS_TRACED, thread)
      yield* client.submit({ agentId: "echo", idempotencyKey: "k", input: { text: "traced" } })
      yield* runAlarmsUntilQuiet({
        client,
        runAlarm: () => runDurableObjectAlarm(env.THREADS_TRACED.getByName(thread)),
      })
      const wanted = [
        "ThreadObject.submit",
        "ThreadMaintenance.pass",
        "DurableAgentRuntime.attemptThreadHead",
      ]
      for (let round = 0; round < 100; round++) {
        if (wanted.every((name) => exportedSpans().some((span) => span.name === name))) break
        yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 20)))
      }
      const names = new Set(exportedSpans().map((span) => span.name))
      for (const name of wanted) expect(names, name).toContain(name)
      const pass = exportedSpans().find(
        (span) => span.name === "ThreadMaintenance.pass" && span.attributes.some((a) => a.key === "settled"),
      )
      expect(pass?.attributes.map((attribute) => attribute.key)).toEqual(
        expect.arrayContaining(["phase", "recovered", "settled", "nonterminal", "alarm"]),
      )
    }),
  )
})
