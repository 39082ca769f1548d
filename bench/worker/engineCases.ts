/**
 * The loops `bench/engine.ts` runs in workerd and in Node: the same code in both, so the two
 * engines' times for it compare. `GET /?case=<name>&n=<iterations>` runs one loop.
 */
import { Effect } from "effect"

/** Arithmetic only. */
const arithmetic = (n: number) => {
  let sum = 0
  for (let i = 0; i < n; i++) sum = (sum + i * 7) % 1_000_003
  return sum
}

/** Small objects and arrays, as rows and records are built. */
const allocation = (n: number) => {
  let last: unknown
  for (let i = 0; i < n; i++) last = { a: i, b: [i, i + 1], c: `x${i % 10}` }
  return last
}

/** A generator resumed three times per iteration, as `Effect.gen` bodies are. */
const generators = (n: number) => {
  let sum = 0
  for (let i = 0; i < n; i++) {
    for (const value of (function* () {
      yield 1
      yield 2
      return 3
    })())
      sum += value
  }
  return sum
}

/** An `Effect.gen` program of five `yield*`s run to its end, per iteration. */
const effects = (n: number) => {
  let sum = 0
  for (let i = 0; i < n; i++) {
    sum += Effect.runSync(
      Effect.gen(function* () {
        let total = 0
        for (let j = 0; j < 5; j++) total += yield* Effect.succeed(j)
        return total
      }),
    )
  }
  return sum
}

/** The loops by name, with the iterations a timed run makes. */
export const engineCases = {
  arithmetic: { run: arithmetic, iterations: 50_000_000 },
  allocation: { run: allocation, iterations: 10_000_000 },
  generators: { run: generators, iterations: 3_000_000 },
  effects: { run: effects, iterations: 300_000 },
} as const

export type EngineCase = keyof typeof engineCases

export default {
  fetch(request: Request): Response {
    const url = new URL(request.url)
    const name = url.searchParams.get("case") as EngineCase
    return new Response(String(engineCases[name].run(Number(url.searchParams.get("n")))))
  },
}
