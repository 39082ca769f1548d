import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import * as AgentEvent from "../../src/core/AgentEvent.ts"
import { define } from "../../src/core/AgentRegistration.ts"
import { contentDigest } from "../../src/core/internal/digest.ts"
import { sha256Hex } from "../../src/core/internal/sha256.ts"

/** Texts of every shape a digest meets: empty, ASCII, astral, lone surrogates, several blocks. */
const texts = (): ReadonlyArray<string> => {
  const units = [0x00, 0x41, 0x7f, 0x80, 0xe9, 0x7ff, 0x800, 0xd83d, 0xde00, 0xdc00, 0xfffd, 0xffff]
  let seed = 7
  const next = () => {
    seed = (seed * 1103515245 + 12345) % 0x80000000
    return seed
  }
  const random = Array.from({ length: 200 }, (_, index) =>
    String.fromCharCode(...Array.from({ length: index % 150 }, () => units[next() % units.length]!)),
  )
  const boundaries = [55, 56, 63, 64, 65, 119, 120, 128, 1000].map((length) => "a".repeat(length))
  return ["", "abc", "é😀\u0000x", "\ud800", ...boundaries, ...random]
}

const hex = (bytes: ArrayBuffer) =>
  Array.from(new Uint8Array(bytes), (byte) => byte.toString(16).padStart(2, "0")).join("")

/** The digest as the stored ids and digests were first computed: 64-bit FNV-1a in BigInt. */
const referenceContentDigest = (text: string): string => {
  const lane = (seed: bigint) => {
    let hash = seed
    for (let index = 0; index < text.length; index++) {
      hash ^= BigInt(text.charCodeAt(index))
      hash = (hash * 0x100000001b3n) & 0xffffffffffffffffn
    }
    return hash.toString(16).padStart(16, "0")
  }
  return lane(0xcbf29ce484222325n) + lane(0x84222325cbf29ce4n)
}

describe("digests", () => {
  it("sha256Hex answers the FIPS 180-4 examples", () => {
    expect(sha256Hex("abc")).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    expect(sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")).toBe(
      "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
    )
  })

  it.effect("sha256Hex agrees with WebCrypto over the UTF-8 bytes of any text, in any order", () =>
    Effect.gen(function* () {
      // Longest first, so shorter texts reuse a scratch buffer a longer one left dirty.
      const all = [...texts()].sort((a, b) => b.length - a.length)
      for (const text of [...all, ...all.toReversed()]) {
        const expected = yield* Effect.promise(() =>
          crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)),
        )
        expect(sha256Hex(text), JSON.stringify(text)).toBe(hex(expected))
      }
    }),
  )

  it("contentDigest keeps the values stored databases hold", () => {
    expect(contentDigest("")).toBe("cbf29ce48422232584222325cbf29ce4")
    expect(contentDigest('{"n":1,"probe":"x"}')).toBe("e2bddc3a85a63f50d4b10b851698ebcf")
    expect(contentDigest("é😀\u0000x")).toBe("7718af7024bca871aa4775f5a58f1482")
    for (const text of texts())
      expect(contentDigest(text), JSON.stringify(text)).toBe(referenceContentDigest(text))
  })
})

describe("agent contract digests", () => {
  const contract = {
    id: "pinned",
    version: "1",
    input: Schema.Struct({ n: Schema.Int }),
    output: Schema.String,
    program: () => Effect.succeed("done"),
  }
  const shipped = AgentEvent.make("shipped", Schema.Struct({ tracking: Schema.String }))
  const cancelled = AgentEvent.make("cancelled", Schema.Struct({ reason: Schema.String }))

  it("keeps the digests of agents that declare no events, as admitted work stored them", () => {
    // Computed before agents could declare events: every admitted row carries such a digest.
    expect(define(contract).digest).toBe("6cee4e2f846bc6203ac44e93ffe95be1")
    expect(define({ ...contract, events: [] }).digest).toBe("6cee4e2f846bc6203ac44e93ffe95be1")
    expect(define({ ...contract, acceptsJoinedInput: true }).digest).toBe("597c14c268bb8f52c3dcbbd49b964e07")
  })

  it("covers each declared event's name and payload Schema, in any declaration order", () => {
    const both = define({ ...contract, events: [shipped, cancelled] }).digest
    expect(define({ ...contract, events: [cancelled, shipped] }).digest).toBe(both)
    expect(define({ ...contract, events: [shipped] }).digest).not.toBe(both)
    expect(define({ ...contract, events: [shipped] }).digest).not.toBe(define(contract).digest)
    const renamed = AgentEvent.make("dispatched", shipped.payload)
    const retyped = AgentEvent.make("shipped", Schema.Struct({ tracking: Schema.Int }))
    expect(define({ ...contract, events: [renamed, cancelled] }).digest).not.toBe(both)
    expect(define({ ...contract, events: [retyped, cancelled] }).digest).not.toBe(both)
  })

  it("refuses two events of one name", () => {
    expect(() =>
      define({ ...contract, events: [shipped, AgentEvent.make("shipped", Schema.Number)] }),
    ).toThrow(/declares an event name twice/)
  })
})
