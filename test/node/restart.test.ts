/**
 * A Miniflare restart over the same persist folder: what a SQLite-backed Durable Object keeps
 * (SQL rows, the pending alarm) and that an alarm which fell due while nothing ran is delivered
 * by the new runtime on its own, before any request reaches the Object.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { ProbeState } from "./fixtures/probeState.ts"
import { probePath, probeSpec } from "./probe.ts"
import { startLocalWorker } from "./support/localWorker.ts"
import { signalListener } from "./support/signalListener.ts"
import { tempDir } from "./support/tempDir.ts"

const post = { method: "POST" }

describe("Miniflare restart", () => {
  it.live("keeps SQL rows and the pending alarm", () =>
    Effect.gen(function* () {
      const signals = yield* signalListener
      const worker = yield* startLocalWorker(probeSpec(yield* tempDir("restart-keeps"), signals.url))
      const armed = yield* worker.json(ProbeState, probePath("/arm", "keeps", { delay: "60000" }), post)
      expect(armed.alarm).not.toBeNull()

      yield* worker.restart
      const after = yield* worker.json(ProbeState, probePath("/state", "keeps"))

      expect(after.incarnation).not.toBe(armed.incarnation)
      expect(after.hits).toBe(1)
      expect(after.name).toBe("keeps")
      expect(after.events).toEqual(armed.events)
      expect(after.alarm).toBe(armed.alarm)
      expect(yield* signals.drain).toEqual([])
    }),
  )

  it.live("delivers an overdue alarm after the restart with no request", () =>
    Effect.gen(function* () {
      const signals = yield* signalListener
      const worker = yield* startLocalWorker(probeSpec(yield* tempDir("restart-overdue"), signals.url))
      const armed = yield* worker.json(ProbeState, probePath("/arm", "overdue", { delay: "1500" }), post)
      expect(armed.alarm).not.toBeNull()
      const due = armed.alarm ?? 0
      yield* worker.stop
      expect(Date.now()).toBeLessThan(due)

      // Start only once the alarm is overdue, then send nothing: the signal is the only witness.
      yield* Effect.sleep(Math.max(0, due - Date.now()) + 300)
      yield* worker.start
      const signal = yield* signals.next.pipe(
        Effect.timeout("15 seconds"),
        Effect.flatMap(Schema.decodeUnknownEffect(ProbeState)),
        Effect.orDie,
      )

      expect(signal.incarnation).not.toBe(armed.incarnation)
      expect(signal.hits).toBe(0)
      expect(signal.events.map((event) => event.kind)).toEqual(["request", "alarm"])
      const delivery = signal.events[1]
      expect(delivery?.incarnation).toBe(signal.incarnation)
      expect(delivery?.at).toBeGreaterThanOrEqual(due)

      const after = yield* worker.json(ProbeState, probePath("/state", "overdue"))
      expect(after.alarm).toBeNull()
      expect(after.events).toEqual(signal.events)
      expect(yield* signals.drain).toEqual([])
    }),
  )
})
