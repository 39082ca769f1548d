/**
 * Drives the crash Worker (fixtures/crashWorker.ts) from Node: its routes, the alarm signals it
 * sends, and its three ways of running over one persist folder: `normal`, a restart of it, and
 * `inspect` (the Objects open without their runtime, so storage is read exactly as left).
 */
import { Effect, Schema, type Scope } from "effect"
import {
  AlarmSignal,
  type ArmEntry,
  CrashLog,
  type NetworkFaults,
  NetworkStats,
  RawView,
  SupplierCall,
} from "../fixtures/crashProtocol.ts"
import { type LocalWorker, postJson, startLocalWorker } from "./localWorker.ts"
import { signalListener } from "./signalListener.ts"
import { tempDir } from "./tempDir.ts"

/** The answer of a client route: the value, or the typed error the client returned. */
export type Envelope =
  | { readonly ok: true; readonly value: unknown }
  | {
      readonly ok: false
      /** `reason` is a `ThreadObjectFailure`'s. */
      readonly error: { readonly _tag: string; readonly message: string; readonly reason?: string }
    }

const EnvelopeSchema = Schema.Union([
  Schema.Struct({ ok: Schema.Literal(true), value: Schema.Unknown }),
  Schema.Struct({
    ok: Schema.Literal(false),
    error: Schema.Struct({
      _tag: Schema.String,
      message: Schema.String,
      reason: Schema.optionalKey(Schema.String),
    }),
  }),
])

/** How the Objects open: with their runtime, or storage only. */
export type Mode = "normal" | "inspect"

/** A crash Worker over one persist folder. */
export interface CrashDriver {
  /** Stops the running runtime and boots one in `mode` over the same folder. */
  readonly boot: (mode: Mode) => Effect.Effect<void, never, Scope.Scope>
  readonly stop: Effect.Effect<void>
  /** A client route of the Object `name` (counted by the Worker as a client call). */
  readonly call: (path: string, body: Record<string, unknown>) => Effect.Effect<Envelope>
  readonly id: (name: string) => Effect.Effect<string>
  readonly arm: (name: string, entries: ReadonlyArray<ArmEntry>) => Effect.Effect<void>
  readonly log: (name: string) => Effect.Effect<CrashLog>
  readonly trace: (name: string) => Effect.Effect<ReadonlyArray<string>>
  readonly kill: (name: string) => Effect.Effect<void>
  /** Puts a faulty network in front of the Object's `portCall` (with `faults`); what it did so far. */
  readonly network: (name: string, faults?: NetworkFaults) => Effect.Effect<NetworkStats | null>
  readonly supplier: (name: string) => Effect.Effect<ReadonlyArray<SupplierCall>>
  readonly perform: (name: string, operation: string, reference: string) => Effect.Effect<void>
  readonly raw: (name: string) => Effect.Effect<RawView>
  /** Every failpoint location the Worker's code defines, by kind. */
  readonly locations: Effect.Effect<
    Readonly<Record<"maintenance" | "runtime" | "storage", ReadonlyArray<string>>>
  >
  /** Every alarm signal received so far, oldest first. */
  readonly signals: Effect.Effect<ReadonlyArray<AlarmSignal>>
}

const decodeSignal = Schema.decodeUnknownSync(AlarmSignal)

/** How the crash Worker's Thread Objects are configured. */
export interface CrashOptions {
  /** `maxHeadsPerEvent` (the default when absent). */
  readonly maxHeadsPerEvent?: number
}

/** Starts the crash Worker in `normal` mode over a fresh folder; the scope removes it. */
export const crashDriver = (
  label: string,
  options: CrashOptions = {},
): Effect.Effect<CrashDriver, never, Scope.Scope> =>
  Effect.gen(function* () {
    const listener = yield* signalListener
    const persistDir = yield* tempDir(label)
    const received: Array<AlarmSignal> = []
    let current: LocalWorker | undefined

    const boot = (mode: Mode) =>
      Effect.gen(function* () {
        if (current !== undefined) yield* current.stop
        current = yield* startLocalWorker({
          entry: new URL("../fixtures/crashWorker.ts", import.meta.url),
          durableObjects: { THREADS: "CrashThreads", SUPPLIER: "Supplier" },
          persistDir,
          bindings: {
            SIGNAL_URL: listener.url,
            MODE: mode,
            ...(options.maxHeadsPerEvent === undefined
              ? {}
              : { MAX_HEADS_PER_EVENT: String(options.maxHeadsPerEvent) }),
          },
        })
      })
    const worker = Effect.suspend(() =>
      current === undefined ? Effect.die(new Error("the crash Worker is stopped")) : Effect.succeed(current),
    )
    const post = <A>(schema: Schema.Decoder<A>, path: string, body: Record<string, unknown>) =>
      Effect.flatMap(worker, (running) => running.json(schema, path, postJson(body)))
    const ignore = Schema.Unknown

    yield* boot("normal")
    return {
      boot,
      stop: Effect.suspend(() => (current === undefined ? Effect.void : current.stop)),
      call: (path, body) => post(EnvelopeSchema, path, body),
      id: (name) => Effect.map(post(Schema.Struct({ id: Schema.String }), "/id", { name }), (r) => r.id),
      arm: (name, entries) => Effect.asVoid(post(ignore, "/arm", { name, entries })),
      log: (name) => post(CrashLog, "/log", { name }),
      trace: (name) => post(Schema.Array(Schema.String), "/trace", { name }),
      kill: (name) => Effect.asVoid(post(ignore, "/kill", { name })),
      network: (name, faults) =>
        post(Schema.NullOr(NetworkStats), "/network", { name, ...(faults === undefined ? {} : { faults }) }),
      supplier: (name) => post(Schema.Array(SupplierCall), "/supplier", { name }),
      perform: (name, operation, reference) =>
        Effect.asVoid(post(ignore, "/perform", { name, operation, reference })),
      raw: (name) => post(RawView, "/raw", { name }),
      locations: post(
        Schema.Struct({
          maintenance: Schema.Array(Schema.String),
          runtime: Schema.Array(Schema.String),
          storage: Schema.Array(Schema.String),
        }),
        "/locations",
        { name: "-" },
      ),
      signals: Effect.map(listener.drain, (bodies) => {
        for (const body of bodies) received.push(decodeSignal(body))
        return [...received]
      }),
    } satisfies CrashDriver
  })
