import { env, runInDurableObject } from "cloudflare:test"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import { ThreadObjectNamespace } from "../src/CloudflareBindings.ts"
import { CloudflareConfigError } from "../src/CloudflareConfig.ts"

const inObject = <A>(body: (ctx: DurableObjectState) => Promise<A>) =>
  runInDurableObject(env.THREADS_TEST.getByName(crypto.randomUUID()), (_instance, ctx) => body(ctx))

const namespaceOf = (ctx: DurableObjectState, binding: string) =>
  Effect.runPromiseExit(
    Effect.gen(function* () {
      return yield* ThreadObjectNamespace
    }).pipe(Effect.provide(ThreadObjectNamespace.layer(ctx, env, binding))),
  )

describe("ThreadObjectNamespace", () => {
  it("provides the namespace binding of the running Object", async () => {
    const exit = await inObject((ctx) => namespaceOf(ctx, "THREADS_TEST"))
    expect(Exit.isSuccess(exit) && exit.value.binding).toBe("THREADS_TEST")
    expect(Exit.isSuccess(exit) && exit.value.namespace).toBe(env.THREADS_TEST)
  })

  it("refuses a binding of another namespace, or no namespace at all, naming it", async () => {
    for (const [binding, problem] of [
      ["LEDGER_TEST", "is not the namespace of this Object"],
      ["NO_SUCH_BINDING", "is not a Durable Object namespace binding"],
    ] as const) {
      const exit = await inObject((ctx) => namespaceOf(ctx, binding))
      const failure = Exit.isFailure(exit)
        ? exit.cause.reasons.find((r) => r._tag === "Fail")?.error
        : undefined
      expect(failure).toBeInstanceOf(CloudflareConfigError)
      expect(failure).toMatchObject({ field: "namespaceBinding", message: expect.stringContaining(problem) })
      expect((failure as CloudflareConfigError).message).toContain(`env.${binding}`)
    }
  })
})
