/**
 * An HTTP listener on 127.0.0.1 that collects JSON bodies POSTed to it. Workers in Miniflare may
 * fetch loopback addresses, so an alarm handler can report its delivery here: the test then sees
 * the delivery without sending the Object any request that could have caused it.
 */
import { Effect, Queue, type Scope } from "effect"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"

/** A running listener: its URL and the bodies received so far, in arrival order. */
export interface SignalListener {
  readonly url: string
  /** The next body not yet taken; waits for one to arrive. */
  readonly next: Effect.Effect<unknown>
  /** Every body received and not yet taken, without waiting. */
  readonly drain: Effect.Effect<ReadonlyArray<unknown>>
}

/** Starts a listener on an ephemeral port, closed when the scope closes. */
export const signalListener: Effect.Effect<SignalListener, never, Scope.Scope> = Effect.gen(function* () {
  const bodies = yield* Queue.unbounded<unknown>()
  const server = yield* Effect.acquireRelease(
    Effect.callback<ReturnType<typeof createServer>>((resume) => {
      const server = createServer((request, response) => {
        const chunks: Array<Buffer> = []
        request.on("data", (chunk: Buffer) => chunks.push(chunk))
        request.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8")
          Queue.offerUnsafe(bodies, text === "" ? null : JSON.parse(text))
          response.end("ok")
        })
      })
      server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
    }),
    (server) =>
      Effect.callback<void>((resume) => {
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      }),
  )
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}/`,
    next: Queue.take(bodies),
    drain: Queue.clear(bodies),
  }
})
