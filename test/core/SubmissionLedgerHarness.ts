/**
 * Harnesses for the ledger conformance suite: the SQLite ledger and history inside a fresh
 * SQLite-backed Durable Object per case, and the in-memory pair.
 */
import { sqlClientLayer } from "../../src/internal/object/sqlClient.ts"
import { env, runInDurableObject } from "cloudflare:test"
import { Effect, Layer } from "effect"
import {
  SubmissionLedgerLimits,
  SubmissionLedgerRetention,
  type LedgerLimits,
} from "../../src/core/SubmissionLedger.ts"
import { layerMemoryWithLedger, layerWithLedger } from "../../src/core/ThreadHistory.ts"
import type { LedgerHarness } from "./SubmissionLedgerFixtures.ts"

interface LedgerOptions {
  readonly limits?: LedgerLimits | undefined
  readonly retention?: boolean | undefined
}

const optionsLayer = (options: LedgerOptions | undefined) =>
  Layer.mergeAll(
    options?.limits === undefined ? Layer.empty : Layer.succeed(SubmissionLedgerLimits, options.limits),
    options?.retention === undefined
      ? Layer.empty
      : Layer.succeed(SubmissionLedgerRetention, { enabled: options.retention }),
  )

/** The SQL ledger and history over one Object's storage. */
/** A statement's text; one whose row limit is written into it, at a page of 50. */
export type StatementText = string | ((rows: number) => string)
export const textOf = (statement: StatementText): string =>
  typeof statement === "string" ? statement : statement(50)

export const sqlLayer = (storage: DurableObjectStorage, options?: LedgerOptions) =>
  layerWithLedger.pipe(Layer.provide(sqlClientLayer(storage)), Layer.provide(optionsLayer(options)))

/** Runs `body` inside the Durable Object named `name` (fresh by default) with its storage. */
export const inObject = <A, E>(
  body: (storage: DurableObjectStorage) => Effect.Effect<A, E>,
  name: string = crypto.randomUUID(),
): Effect.Effect<A, E> =>
  Effect.flatMap(
    Effect.promise(() =>
      runInDurableObject(env.LEDGER_TEST.getByName(name), (_instance, state) =>
        Effect.runPromiseExit(body(state.storage)),
      ),
    ),
    (exit) => exit,
  )

/** Each case in a fresh SQLite-backed Object. */
export const sqlHarness: LedgerHarness = {
  run: (body, options) => inObject((storage) => Effect.provide(body, sqlLayer(storage, options))),
}

/** Each case over a fresh in-memory store. */
export const memoryHarness: LedgerHarness = {
  run: (body, options) =>
    Effect.provide(body, layerMemoryWithLedger.pipe(Layer.provide(optionsLayer(options)))),
}
