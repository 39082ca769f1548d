import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Tracer } from "effect"
import { advance, caughtUpRecord, hostHooks, withJitter } from "./fixtures.ts"
import { dayAhead, inObject, objectName, putRawState } from "./harness.ts"
import { incarnation } from "../support/incarnation.ts"

/** A tracer that keeps every span it starts. */
const recordingTracer = () => {
  const spans: Array<Tracer.NativeSpan> = []
  const tracer = Tracer.make({
    span(options) {
      const span = new Tracer.NativeSpan(options)
      spans.push(span)
      return span
    },
  })
  const named = (name: string) => spans.filter((span) => span.name === name)
  return { tracer, spans, named }
}

const attributesOf = (span: Tracer.NativeSpan | undefined) => Object.fromEntries(span?.attributes ?? [])

describe("pass telemetry", () => {
  it.effect("annotates the pass span with its report and whether the host join was cut off", () =>
    inObject(objectName("pass-span"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        yield* putRawState(ctx, caughtUpRecord(5n, { nonterminal: 1 }))
        const quick = recordingTracer()
        const { maintenance } = yield* incarnation(ctx)
        yield* Effect.withTracer(maintenance.pass, quick.tracer)
        expect(attributesOf(quick.named("ThreadMaintenance.pass")[0])).toEqual({
          phase: "caught-up",
          recovered: 0,
          settled: 0,
          nonterminal: 1,
          alarm: "cleared",
          "host.timedOut": false,
        })

        const slow = recordingTracer()
        const retiring = yield* Deferred.make<void>()
        const stuck = yield* incarnation(ctx, {
          host: hostHooks({
            dispatchTimeoutMillis: 500,
            drainUntil: (sourceFinished) =>
              Effect.andThen(
                sourceFinished,
                Effect.andThen(Deferred.succeed(retiring, undefined), Effect.never),
              ),
          }),
        })
        const pass = yield* Effect.forkChild(Effect.withTracer(stuck.maintenance.pass, slow.tracer))
        yield* Deferred.await(retiring)
        yield* advance(500)
        yield* Fiber.join(pass)
        expect(attributesOf(slow.named("ThreadMaintenance.pass")[0])).toMatchObject({ "host.timedOut": true })
      }),
    ),
  )

  it.effect("names its spans for telemetry parity", () =>
    inObject(objectName("span-names"), (ctx) =>
      Effect.gen(function* () {
        yield* dayAhead
        yield* putRawState(ctx, caughtUpRecord(5n))
        const recorded = recordingTracer()
        const { maintenance, gate } = yield* incarnation(ctx, {
          host: hostHooks({ drainUntil: () => Effect.die("host outbox unavailable") }),
        })
        yield* Effect.withTracer(
          Effect.gen(function* () {
            yield* maintenance.ensureAlarm
            yield* gate.withMutation(Effect.void, { invalidatesRecovery: false })
            yield* Effect.exit(withJitter(0)(maintenance.pass))
          }),
          recorded.tracer,
        )
        const names = new Set(recorded.spans.map((span) => span.name))
        for (const name of [
          "ThreadMaintenance.ensureAlarm",
          "ThreadMaintenance.beginMutation",
          "ThreadMaintenance.beginPass",
          "ThreadMaintenance.pass",
          "ThreadMaintenance.rearmFailure",
        ]) {
          expect(names).toContain(name)
        }
      }),
    ),
  )
})
