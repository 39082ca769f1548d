import { describe, expect, it } from "@effect/vitest"
import { Effect, Option, Schema } from "effect"
import { AgentRegistry, contractDigest, define, withDigest } from "../../src/core/AgentRegistration.ts"
import { DurableAgentRuntime } from "../../src/core/DurableAgentRuntime.ts"
import { AgentId } from "../../src/core/Identifiers.ts"

const registryService = Effect.gen(function* () {
  return yield* AgentRegistry
})

const contract = {
  id: "summarize",
  version: "1",
  input: Schema.Struct({ text: Schema.String }),
  output: Schema.String,
  program: () => Effect.succeed("summary"),
}

describe("AgentRegistration", () => {
  it("derives the digest from the contract, not from the program", () => {
    const agent = define(contract)
    const sameContract = define({ ...contract, program: () => Effect.succeed("other code") })
    expect(agent.digest).toBe(sameContract.digest)
    expect(agent.digest).toMatch(/^[0-9a-f]{32}$/)
    expect(define({ ...contract, version: "2" }).digest).not.toBe(agent.digest)
    const numbers = define({ ...contract, output: Schema.Number, program: () => Effect.succeed(1) })
    expect(numbers.digest).not.toBe(agent.digest)
    expect(agent.digest).toBe(contractDigest({ ...contract, id: agent.id, name: "summarize" }))
  })

  it("refuses an invalid agent id at definition", () => {
    expect(() => define({ ...contract, id: "" })).toThrow()
  })

  it.effect("resolves only the admitted contract and fails closed otherwise", () =>
    Effect.gen(function* () {
      const agent = define(contract)
      const registry = yield* Effect.provide(registryService, AgentRegistry.layer([agent]))
      expect(Option.map(registry.lookup(agent.id), (found) => found.digest)).toEqual(
        Option.some(agent.digest),
      )
      expect((yield* registry.resolve(agent.id, agent.digest)).id).toBe(agent.id)
      const mismatch = yield* Effect.flip(registry.resolve(agent.id, withDigest(agent, "older").digest))
      expect(mismatch).toMatchObject({ _tag: "BindingDigestMismatch", agentId: "summarize" })
      const unavailable = yield* Effect.flip(registry.resolve(AgentId.make("missing"), agent.digest))
      expect(unavailable).toMatchObject({ _tag: "BindingUnavailable", agentId: "missing" })
    }),
  )

  it("refuses to register the same agent id twice where the layer is built", () => {
    const agent = define(contract)
    // Thrown where a Worker's module builds its layer: a deploy with it fails at startup.
    expect(() => AgentRegistry.layer([agent, agent])).toThrow("Agent summarize is registered twice")
    expect(() =>
      DurableAgentRuntime.layerWithBindings([agent, define({ ...contract, version: "2" })]),
    ).toThrow("registered twice")
  })
})
