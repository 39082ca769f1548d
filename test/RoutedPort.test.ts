/**
 * The Cloudflare `RoutedPort` through real namespace bindings: routing by name and by id, the
 * envelope on the wire, replies and refusals decoded back into their types, and failures that
 * say whether a retry can help.
 */
import { describe, expect, it } from "@effect/vitest"
import { env } from "cloudflare:test"
import { Effect, Layer } from "effect"
import { DurableObjectContext } from "../src/CloudflareBindings.ts"
import { IdempotencyKey, ThreadId } from "../src/core/Identifiers.ts"
import { type PortEnvelope, RoutedPort } from "../src/RoutedPort.ts"
import type { ProbeAnswer } from "./worker/portProbeObject.ts"

const port = RoutedPort.layer.pipe(Layer.provide(DurableObjectContext.layer({} as DurableObjectState, env)))

const envelope: PortEnvelope = {
  messageId: "abort:p:1",
  request: { _tag: "AbortChild", threadId: ThreadId.make("t"), idempotencyKey: IdempotencyKey.make("k") },
}

const probe = (name: string, answer: ProbeAnswer) =>
  Effect.promise(async () => {
    const stub = env.PORT_PROBE.getByName(name)
    await stub.script(answer)
    return stub
  })

const call = (address: Parameters<RoutedPort["Service"]["call"]>[0]) =>
  Effect.gen(function* () {
    const routed = yield* RoutedPort
    return yield* Effect.exit(routed.call(address, envelope))
  }).pipe(Effect.provide(port))

describe("RoutedPort (Cloudflare)", () => {
  it.effect("reaches an Object by name, sends the encoded envelope and decodes its reply", () =>
    Effect.gen(function* () {
      const name = crypto.randomUUID()
      const stub = yield* probe(name, {
        _tag: "Envelope",
        result: { ok: true, value: { _tag: "ChildAbortRecorded", known: true } },
      })
      const exit = yield* call({ namespace: "PORT_PROBE", objectName: name })
      expect(exit).toMatchObject({ _tag: "Success", value: { _tag: "ChildAbortRecorded", known: true } })
      expect(yield* Effect.promise(() => stub.received())).toEqual([envelope])
    }),
  )

  it.effect("reaches an Object by its id", () =>
    Effect.gen(function* () {
      const name = crypto.randomUUID()
      yield* probe(name, {
        _tag: "Envelope",
        result: { ok: true, value: { _tag: "ChildSettledRecorded", applied: false } },
      })
      const objectId = env.PORT_PROBE.idFromName(name).toString()
      const exit = yield* call({ namespace: "PORT_PROBE", objectId })
      expect(exit).toMatchObject({ _tag: "Success", value: { _tag: "ChildSettledRecorded", applied: false } })
    }),
  )

  it.effect("decodes the receiver's refusal back into a PortProtocolError", () =>
    Effect.gen(function* () {
      const name = crypto.randomUUID()
      yield* probe(name, {
        _tag: "Envelope",
        result: {
          ok: false,
          error: {
            _tag: "PortProtocolError",
            reason: "prearm-failed",
            message: "could not arm its maintenance alarm",
          },
        },
      })
      const exit = yield* call({ namespace: "PORT_PROBE", objectName: name })
      expect(exit).toMatchObject({
        _tag: "Failure",
        cause: { reasons: [{ error: { _tag: "PortProtocolError", reason: "prearm-failed" } }] },
      })
    }),
  )

  it.effect.each<readonly [string, ProbeAnswer, string]>([
    ["a thrown error", { _tag: "Throw", message: "boom" }, "boom"],
    [
      "a malformed reply",
      { _tag: "Envelope", result: { ok: true, value: { _tag: "Nope" } } },
      "malformed reply",
    ],
    ["an answer that is no envelope", { _tag: "Envelope", result: null }, "malformed answer"],
  ])("reports %s as PortUnavailable (a retry may help)", ([, answer, text]) =>
    Effect.gen(function* () {
      const name = crypto.randomUUID()
      yield* probe(name, answer)
      const exit = yield* call({ namespace: "PORT_PROBE", objectName: name })
      expect(exit._tag).toBe("Failure")
      expect(JSON.stringify(exit)).toContain("PortUnavailable")
      expect(JSON.stringify(exit)).toContain(text)
    }),
  )

  it.effect.each<readonly [string, { namespace: string; objectName?: string; objectId?: string }, string]>([
    [
      "a binding the Worker does not have",
      { namespace: "NOPE", objectName: "x" },
      "no Durable Object namespace is bound as NOPE",
    ],
    [
      "a binding that is not a namespace",
      { namespace: "toString", objectName: "x" },
      "no Durable Object namespace",
    ],
    ["an id that is not one", { namespace: "PORT_PROBE", objectId: "not-an-id" }, "cannot address not-an-id"],
  ])("reports %s as PortUnreachable (no retry can help)", ([, address, text]) =>
    Effect.gen(function* () {
      const exit = yield* call(address)
      expect(exit._tag).toBe("Failure")
      expect(JSON.stringify(exit)).toContain("PortUnreachable")
      expect(JSON.stringify(exit)).toContain(text)
    }),
  )
})
