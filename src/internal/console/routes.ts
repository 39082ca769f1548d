/**
 * The console's JSON routes, under `<basePath>/api/`. Each route is one or two calls of a
 * Thread's client, made as the browser's caller: the Object's own authorization check decides
 * every call, reads included. Calls that concern an Object rather than a Thread (its Threads,
 * obligations, verify, repair) address the Thread named by `?thread=`, or the Thread named
 * after the Object (the default placement of a Thread). An Object is named in the path by
 * the name it is reached by (`objects/:o`), or by its id (`ids/:id`, the same routes): a
 * child's record names its parent's Object by id.
 *
 *   GET  objects                                    the Objects the application lists
 *   GET  actions                                    the actions the page offers
 *   GET  objects/:o[?after&limit]                   its Threads with counts (`threadPage`)
 *   GET  objects/:o/obligations | objects/:o/verify
 *   POST objects/:o/actions/:action                 an Object action (repair)
 *   GET  objects/:o/threads/:t/submissions[?state&agent&waiting&cursor&limit]
 *   GET  objects/:o/threads/:t/keys/:key            the Submission admitted under a key
 *   GET  objects/:o/threads/:t/submissions/:s       explanation and records
 *   GET  objects/:o/threads/:t/submissions/:s/progress?after&timeoutMillis   (long poll)
 *   POST objects/:o/threads/:t/submissions/:s/actions/:action                 {"fields":{…}}
 */
import { Effect } from "effect"
import type { ThreadClient, ThreadClientError } from "../../ThreadClient.ts"
import { CONSOLE_ACTIONS, actionEntries } from "./actions.ts"
import {
  ConsoleActionUnavailable,
  ConsoleRouteNotFound,
  InvalidConsoleRequest,
  ObjectDirectoryFailed,
} from "./errors.ts"
import { kindOfExplained } from "./explained.ts"

/** An Object as a route names it: by the name it is reached by, or by its id. @internal */
export interface ObjectRef {
  readonly by: "name" | "id"
  readonly key: string
}

/** What the routes are given for one request. @internal */
export interface RouteContext {
  readonly request: Request
  readonly url: URL
  /** A client of `threadId` in the Object, calling as the browser's caller. */
  readonly client: (object: ObjectRef, threadId: string) => ThreadClient
  /** Whether the namespace can address an Object by its id. */
  readonly addressesIds: boolean
  /** Whether `id` is an Object id of this namespace (one of another namespace is not). */
  readonly isObjectId: (id: string) => boolean
  readonly objects: () => Promise<ReadonlyArray<string>>
  readonly namespaceBinding: string | undefined
}

/** What a route can fail with. @internal */
export type RouteError =
  | ThreadClientError
  | InvalidConsoleRequest
  | ConsoleRouteNotFound
  | ConsoleActionUnavailable
  | ObjectDirectoryFailed

type Params = Readonly<Record<string, string>>
type Route = (context: RouteContext, params: Params) => Effect.Effect<unknown, RouteError>

/** Longest wait of one progress request: well inside the Object's limit and a Worker's request. */
const MAX_PROGRESS_WAIT_MILLIS = 25_000

const integer = (url: URL, name: string) => {
  const raw = url.searchParams.get(name)
  if (raw === null || raw === "") return Effect.succeed(undefined)
  // Decimal digits only: `Number` would also read "0x10" and "1e3".
  const value = /^-?\d+$/.test(raw) ? Number(raw) : Number.NaN
  return Number.isSafeInteger(value)
    ? Effect.succeed(value)
    : Effect.fail(
        new InvalidConsoleRequest({ message: `${name} must be an integer, not ${JSON.stringify(raw)}` }),
      )
}

const text = (url: URL, name: string) => {
  const raw = url.searchParams.get(name)
  return raw === null || raw === "" ? undefined : raw
}

const DURABLE_OBJECT_ID = /^[0-9a-f]{64}$/

/** The Object a route names, checked when it is named by id. */
const objectOf = (context: RouteContext, params: Params) => {
  const key = params["object"] ?? ""
  if (params["by"] !== "id") return Effect.succeed<ObjectRef>({ by: "name", key })
  if (!context.addressesIds)
    return Effect.fail(
      new InvalidConsoleRequest({ message: "this console's namespace cannot address an Object by id" }),
    )
  return DURABLE_OBJECT_ID.test(key) && context.isObjectId(key)
    ? Effect.succeed<ObjectRef>({ by: "id", key })
    : Effect.fail(
        new InvalidConsoleRequest({
          message: `${JSON.stringify(key)} is not an Object id of this namespace`,
        }),
      )
}

/** A client for an Object-wide call: it addresses `?thread=`, or the Thread named like the Object. */
const objectClient = (context: RouteContext, params: Params) =>
  Effect.map(objectOf(context, params), (object) =>
    context.client(object, text(context.url, "thread") ?? object.key),
  )

const threadClient = (context: RouteContext, params: Params) =>
  Effect.map(objectOf(context, params), (object) => context.client(object, params["thread"] ?? ""))

/** The body of an action: `{"fields":{name: string}}`, sent as JSON from this origin. */
const actionFields = (context: RouteContext) =>
  Effect.gen(function* () {
    const { request, url } = context
    // Cross-site forms cannot send JSON without a preflight, and a browser names its origin.
    const origin = request.headers.get("origin")
    if (origin !== null && origin !== url.origin)
      return yield* new InvalidConsoleRequest({ message: `actions are taken from ${url.origin} only` })
    if (!(request.headers.get("content-type") ?? "").startsWith("application/json"))
      return yield* new InvalidConsoleRequest({ message: "an action is sent as application/json" })
    const body: unknown = yield* Effect.tryPromise({
      try: () => request.json(),
      catch: () => new InvalidConsoleRequest({ message: "the action's body is not JSON" }),
    })
    const isObject = (value: unknown): value is object =>
      typeof value === "object" && value !== null && !Array.isArray(value)
    if (!isObject(body))
      return yield* new InvalidConsoleRequest({ message: 'an action\'s body is an object: {"fields": {…}}' })
    const fields = (body as { fields?: unknown }).fields
    if (fields === undefined) return {}
    if (!isObject(fields) || Object.values(fields).some((v) => typeof v !== "string"))
      return yield* new InvalidConsoleRequest({ message: "fields are an object of strings" })
    return fields as Readonly<Record<string, string>>
  })

/** Runs the action `:action` of `scope`, with its fields checked. */
const act =
  (scope: "submission" | "object"): Route =>
  (context, params) =>
    Effect.gen(function* () {
      const action = CONSOLE_ACTIONS.find((entry) => entry.id === params["action"] && entry.scope === scope)
      if (action === undefined)
        return yield* new ConsoleRouteNotFound({ message: `no ${scope} action ${params["action"]}` })
      const fields = yield* actionFields(context)
      const missing = action.fields.find((field) => field.required && (fields[field.name] ?? "") === "")
      if (missing !== undefined)
        return yield* new InvalidConsoleRequest({ message: `${missing.label} is required` })
      if (action.run === undefined)
        return yield* new ConsoleActionUnavailable({
          action: action.id,
          message: `${action.label} needs a call this release's Objects do not have yet`,
        })
      const client = yield* (scope === "object" ? objectClient : threadClient)(context, params)
      const result = yield* action.run(client, params["submission"] ?? "", fields)
      return { ok: true, action: action.id, ...(result === undefined ? {} : { result }) }
    })

const ROUTES: ReadonlyArray<readonly [method: string, pattern: string, route: Route]> = [
  [
    "GET",
    "objects",
    (context) =>
      Effect.map(
        Effect.tryPromise({
          try: context.objects,
          catch: (cause) =>
            new ObjectDirectoryFailed({ message: cause instanceof Error ? cause.message : String(cause) }),
        }),
        (objects) => ({
          objects,
          ...(context.namespaceBinding === undefined ? {} : { namespaceBinding: context.namespaceBinding }),
        }),
      ),
  ],
  ["GET", "actions", () => Effect.succeed({ actions: actionEntries() })],
  [
    "GET",
    "objects/:object",
    (context, params) =>
      Effect.gen(function* () {
        const limit = yield* integer(context.url, "limit")
        const after = text(context.url, "after")
        return yield* (yield* objectClient(context, params)).threadPage({
          ...(after === undefined ? {} : { after }),
          ...(limit === undefined ? {} : { limit }),
        })
      }),
  ],
  [
    "GET",
    "objects/:object/obligations",
    (context, params) => Effect.flatMap(objectClient(context, params), (client) => client.obligations),
  ],
  [
    "GET",
    "objects/:object/verify",
    (context, params) => Effect.flatMap(objectClient(context, params), (client) => client.verify),
  ],
  ["POST", "objects/:object/actions/:action", act("object")],
  [
    "GET",
    "objects/:object/threads/:thread/submissions",
    (context, params) =>
      Effect.gen(function* () {
        const { url } = context
        const cursor = yield* integer(url, "cursor")
        const limit = yield* integer(url, "limit")
        const states = text(url, "state")?.split(",")
        const agentId = text(url, "agent")
        const waiting = text(url, "waiting")
        return yield* (yield* threadClient(context, params)).submissionPage({
          // The Object decodes the states and the kind and refuses what it does not know.
          ...(states === undefined ? {} : { states: states as never }),
          ...(agentId === undefined ? {} : { agentId }),
          ...(waiting === undefined ? {} : { waiting: waiting as never }),
          ...(cursor === undefined ? {} : { cursor }),
          ...(limit === undefined ? {} : { limit }),
        })
      }),
  ],
  [
    "GET",
    "objects/:object/threads/:thread/keys/:key",
    (context, params) =>
      Effect.flatMap(threadClient(context, params), (client) => client.findSubmission(params["key"] ?? "")),
  ],
  [
    "GET",
    "objects/:object/threads/:thread/submissions/:submission",
    (context, params) =>
      Effect.gen(function* () {
        const client = yield* threadClient(context, params)
        const id = params["submission"] ?? ""
        const [explanation, progress] = yield* Effect.all(
          [client.explain(id), client.awaitProgress(id, { timeoutMillis: 0 })],
          { concurrency: 2 },
        )
        return { explanation, progress, waiting: kindOfExplained(explanation, progress.records) }
      }),
  ],
  [
    "GET",
    "objects/:object/threads/:thread/submissions/:submission/progress",
    (context, params) =>
      Effect.gen(function* () {
        const wait = (yield* integer(context.url, "timeoutMillis")) ?? MAX_PROGRESS_WAIT_MILLIS
        const after = text(context.url, "after")
        return yield* (yield* threadClient(context, params)).awaitProgress(params["submission"] ?? "", {
          timeoutMillis: Math.max(0, Math.min(wait, MAX_PROGRESS_WAIT_MILLIS)),
          ...(after === undefined ? {} : { after }),
        })
      }),
  ],
  ["POST", "objects/:object/threads/:thread/submissions/:submission/actions/:action", act("submission")],
]

/**
 * The value of one path segment under `api/`: percent-decoded, and `$.` or `$..` is `.` or `..`
 * (a URL parser removes a segment `.` or `..`, `%2E%2E` included, so the page writes them so;
 * it writes a `$` of a value as `%24`). Throws when the segment is not valid percent-encoding.
 * The page's `pathSegment` (`browser/refs.js`) writes what this reads. @internal
 */
export const segmentValue = (segment: string): string =>
  segment === "$." || segment === "$.." ? segment.slice(1) : decodeURIComponent(segment)

/**
 * The route and its parameters for a method and the path segments under `api/`; `ids/` paths
 * take the `objects/` routes with the Object named by id. @internal
 */
export const matchRoute = (
  method: string,
  path: ReadonlyArray<string>,
): { readonly route: Route; readonly params: Params } | undefined => {
  const byId = path[0] === "ids"
  const segments = byId ? ["objects", ...path.slice(1)] : path
  for (const [routeMethod, pattern, route] of ROUTES) {
    const parts = pattern.split("/")
    if (routeMethod !== method || parts.length !== segments.length) continue
    const params: Record<string, string> = { by: byId ? "id" : "name" }
    if (
      parts.every((part, index) => {
        const segment = segments[index] ?? ""
        if (part.startsWith(":")) {
          params[part.slice(1)] = segment
          return segment !== ""
        }
        return part === segment
      })
    )
      return { route, params }
  }
  return undefined
}
