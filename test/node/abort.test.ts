/**
 * `ctx.abort()` inside a request, run from Node (in the vitest pool it leaves an unhandled
 * rejection that fails the run): the incarnation ends, in-memory state goes with it, storage
 * and the pending alarm stay, and nothing leaks into the Node process as an unhandled rejection.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { ProbeState } from "./fixtures/probeState.ts"
import { probePath, probeSpec } from "./probe.ts"
import { startLocalWorker } from "./support/localWorker.ts"
import { signalListener } from "./support/signalListener.ts"
import { tempDir } from "./support/tempDir.ts"

/** Collects the unhandled rejections the Node process sees while the scope is open. */
const unhandledRejections = Effect.acquireRelease(
  Effect.sync(() => {
    const seen: Array<unknown> = []
    const listener = (reason: unknown) => seen.push(reason)
    process.on("unhandledRejection", listener)
    return { seen, listener }
  }),
  ({ listener }) => Effect.sync(() => process.off("unhandledRejection", listener)),
)

describe("ctx.abort()", () => {
  it.live("ends the incarnation and keeps its storage", () =>
    Effect.gen(function* () {
      const rejections = yield* unhandledRejections
      const signals = yield* signalListener
      const worker = yield* startLocalWorker(probeSpec(yield* tempDir("abort"), signals.url))
      const armed = yield* worker.json(ProbeState, probePath("/arm", "abort", { delay: "60000" }), {
        method: "POST",
      })
      const before = yield* worker.json(ProbeState, probePath("/state", "abort"))
      expect(before.incarnation).toBe(armed.incarnation)
      expect(before.hits).toBe(2)

      const aborted = yield* worker.fetch(probePath("/abort", "abort"), { method: "POST" })
      expect(aborted.status).toBe(500)
      expect(yield* Effect.promise(() => aborted.text())).toContain("probe abort")

      const after = yield* worker.json(ProbeState, probePath("/state", "abort"))
      expect(after.incarnation).not.toBe(before.incarnation)
      expect(after.hits).toBe(1)
      expect(after.events).toEqual(armed.events)
      expect(after.alarm).toBe(armed.alarm)
      // Let any late rejection from the aborted request surface before checking.
      yield* Effect.sleep(200)
      expect(rejections.seen).toEqual([])
    }),
  )
})
