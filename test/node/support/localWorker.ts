/**
 * A Worker run by Miniflare from Node over a persist folder, with SQLite-backed Durable Objects.
 * `stop` disposes the runtime (every Object dies, storage stays on disk), `start` boots a new one
 * over the same folder: a restart as a deploy or a host crash would do it. Requests go through
 * `dispatchFetch` with JSON bodies, since Durable Object RPC stubs come back to Node as proxies.
 */
import { Effect, Schema, type Scope } from "effect"
import { Miniflare, type RequestInit, type Response } from "miniflare"
import { bundleWorker } from "./bundle.ts"

/** What to run: a Worker entry, its Durable Object classes, and where their storage lives. */
export interface WorkerSpec {
  /** The Worker entry module; bundled with esbuild. */
  readonly entry: URL | string
  /** Binding name to exported class name; every class is SQLite-backed. */
  readonly durableObjects: Readonly<Record<string, string>>
  /** The folder that keeps Durable Object storage across restarts. */
  readonly persistDir: string
  /** Plain-text `env` bindings. */
  readonly bindings?: Readonly<Record<string, string>>
  /** Opens workerd's inspector on this port (for CPU profiles). */
  readonly inspectorPort?: number
}

/** A running (or stopped) local Worker. */
export interface LocalWorker {
  /** Sends a request to the Worker's `fetch` handler; the path may carry a query. */
  readonly fetch: (path: string, init?: RequestInit) => Effect.Effect<Response>
  /** Sends a request and decodes a 2xx JSON reply with `schema`; any other reply is a defect. */
  readonly json: <A>(schema: Schema.Decoder<A>, path: string, init?: RequestInit) => Effect.Effect<A>
  /** Disposes the runtime; storage stays in the persist folder. */
  readonly stop: Effect.Effect<void>
  /** Boots a new runtime over the persist folder (no-op when running). */
  readonly start: Effect.Effect<void>
  /** `stop` then `start`. */
  readonly restart: Effect.Effect<void>
}

/** JSON body and header for a POST. */
export const postJson = (body: unknown): RequestInit => ({
  method: "POST",
  body: JSON.stringify(body),
  headers: { "content-type": "application/json" },
})

const boot = (spec: WorkerSpec, script: string): Promise<Miniflare> => {
  const durableObjects = Object.fromEntries(
    Object.entries(spec.durableObjects).map(([binding, className]) => [
      binding,
      { className, useSQLite: true },
    ]),
  )
  const mf = new Miniflare({
    modules: true,
    script,
    compatibilityDate: "2026-04-20",
    compatibilityFlags: ["nodejs_compat"],
    durableObjects,
    durableObjectsPersist: spec.persistDir,
    bindings: { ...spec.bindings },
    ...(spec.inspectorPort === undefined ? {} : { inspectorPort: spec.inspectorPort }),
  })
  return mf.ready.then(() => mf)
}

/** Starts the Worker; the scope stops it. */
export const startLocalWorker = (spec: WorkerSpec): Effect.Effect<LocalWorker, never, Scope.Scope> =>
  Effect.gen(function* () {
    const script = yield* bundleWorker(spec.entry)
    let current: Miniflare | undefined

    const stop = Effect.promise(async () => {
      const mf = current
      current = undefined
      if (mf !== undefined) await mf.dispose()
    })
    const start = Effect.promise(async () => {
      if (current === undefined) current = await boot(spec, script)
    })
    const running = Effect.suspend(() =>
      current === undefined ? Effect.die(new Error("the local Worker is stopped")) : Effect.succeed(current),
    )
    const fetch = (path: string, init?: RequestInit): Effect.Effect<Response> =>
      Effect.flatMap(running, (mf) =>
        Effect.promise(() => mf.dispatchFetch(new URL(path, "http://worker/"), init)),
      )
    const json = <A>(schema: Schema.Decoder<A>, path: string, init?: RequestInit): Effect.Effect<A> =>
      Effect.gen(function* () {
        const response = yield* fetch(path, init)
        const text = yield* Effect.promise(() => response.text())
        if (!response.ok) return yield* Effect.die(new Error(`${path} answered ${response.status}: ${text}`))
        return yield* Schema.decodeUnknownEffect(Schema.fromJsonString(schema))(text).pipe(Effect.orDie)
      })

    yield* Effect.acquireRelease(start, () => stop)
    return { fetch, json, stop, start, restart: Effect.andThen(stop, start) }
  })
