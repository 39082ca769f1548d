/**
 * `ThreadConsole`: the operator console as a fetch handler a Worker mounts under any path.
 * It serves a page, its script and stylesheet (all from the Worker: no CDN, a strict
 * Content-Security-Policy) and the JSON the page reads, each answer one or two calls of a
 * `ThreadClient` made as the browser's caller. The console decides nothing about access: the
 * Object's own `authorization` check sees every call with its kind and that caller, so the
 * console allows exactly what the application's policy allows its callers.
 *
 * Discovery: an Object lists its own Threads (`threadPage`), and a Submission's records name
 * the Objects of its children and its parent. What the console cannot find alone is which
 * Objects exist: pass `objects` to list them on the front page (a fixed list, or names the
 * application remembers). Any Object can also be opened by its name.
 */
import { Effect, Exit } from "effect"
import { CONSOLE_SCRIPT, CONSOLE_STYLE } from "./internal/console/assets.ts"
import { ConsoleRouteNotFound, InvalidConsoleRequest } from "./internal/console/errors.ts"
import { errorBody, json, respond, statusOf } from "./internal/console/http.ts"
import { pageHtml } from "./internal/console/page.ts"
import { matchRoute, segmentValue } from "./internal/console/routes.ts"
import * as ThreadClient from "./ThreadClient.ts"

export {
  ConsoleActionUnavailable,
  ConsoleRouteNotFound,
  InvalidConsoleRequest,
  ObjectDirectoryFailed,
} from "./internal/console/errors.ts"
export type { ActionEntry, ActionField, ActionScope } from "./internal/console/actions.ts"
export { CONTENT_SECURITY_POLICY } from "./internal/console/http.ts"

/** Who the browser is, as the Worker vouches for it: sent with every call the console makes. */
export interface ConsoleCaller {
  readonly subject: string
  readonly credential?: string
}

/**
 * The namespace the console addresses: by name, and by id when it can (a Durable Object
 * namespace binding can; a child's record names its parent's Object by id).
 */
export interface ConsoleNamespace extends ThreadClient.ThreadNamespace {
  idFromString?(id: string): unknown
  get?(id: never): unknown
}

/** How the console is mounted and what it needs from the application. */
export interface ThreadConsoleOptions {
  /** The `ThreadObject` namespace binding whose Objects the console reads and acts on. */
  readonly namespace: ConsoleNamespace
  /** Where the console is mounted, e.g. `"/console"` (`""` or `"/"` for the root). */
  readonly basePath: string
  /**
   * The name of the namespace's binding (as in `ThreadObject.make`'s `namespaceBinding`): a
   * child or parent whose address names another binding is shown as text, not as a link.
   * Without it every address is taken to be in this namespace.
   */
  readonly namespaceBinding?: string
  /**
   * The Objects the front page lists, by name: a fixed list, or the names the application
   * remembers (for a Thread in the Object named after it, the Thread's name). Without it the
   * front page only opens an Object by name. No Object's `authorization` sees this list: it is
   * answered to every request, so check `request` here if the names are not for everyone.
   */
  readonly objects?: (request: Request) => ReadonlyArray<string> | Promise<ReadonlyArray<string>>
  /**
   * The caller each call carries, from the browser's request. By default the token of an
   * `Authorization: Bearer` header is the credential of the subject `"console"` (the page sends
   * the operator token it is given); none without the header.
   */
  readonly caller?: (request: Request) => ConsoleCaller | undefined | Promise<ConsoleCaller | undefined>
  /** The page's title; `"Operator console"` by default. */
  readonly title?: string
}

/** A mounted console: answers the requests under its path, and says which those are. */
export interface ThreadConsoleHandler {
  (request: Request): Promise<Response>
  /** Whether `request` is under the console's path (the rest belongs to the application). */
  readonly matches: (request: Request) => boolean
}

/**
 * The default caller: the bearer token as the credential of the subject `"console"` (the
 * scheme in any case, `bearer` too, as HTTP reads it); none without one.
 */
export const bearerCaller = (request: Request): ConsoleCaller | undefined => {
  const token = /^Bearer (.+)$/i.exec(request.headers.get("authorization") ?? "")?.[1]
  return token === undefined ? undefined : { subject: "console", credential: token }
}

const asset = (body: string, type: string) =>
  respond(body, 200, { "content-type": `${type}; charset=utf-8`, "cache-control": "no-cache" })

/** The path segments under `api/`, decoded; `undefined` when one does not decode. */
const apiSegments = (rest: string) => {
  try {
    return rest.split("/").map(segmentValue)
  } catch {
    return undefined
  }
}

/** Builds the console mounted at `options.basePath`. */
export const handler = (options: ThreadConsoleOptions): ThreadConsoleHandler => {
  const base = `/${options.basePath.replace(/^\/+|\/+$/g, "")}`.replace(/^\/$/, "")
  const page = pageHtml({ basePath: base, title: options.title ?? "Operator console" })
  const callerOf = options.caller ?? bearerCaller
  const { namespace } = options
  // The same Objects reached by id: the client asks for an Object by "name", here its id.
  const byId: ThreadClient.ThreadNamespace | undefined =
    namespace.get === undefined || namespace.idFromString === undefined
      ? undefined
      : { getByName: (id) => namespace.get?.(namespace.idFromString?.(id) as never) }
  /** Whether `id` names an Object of this namespace (`idFromString` refuses one of another). */
  const isObjectId = (id: string) => {
    try {
      namespace.idFromString?.(id)
      return true
    } catch {
      return false
    }
  }
  const matches = (request: Request) => {
    const path = new URL(request.url).pathname
    return base === "" || path === base || path.startsWith(`${base}/`)
  }

  const api = async (request: Request, url: URL, rest: string): Promise<Response> => {
    const segments = apiSegments(rest)
    const found = segments === undefined ? undefined : matchRoute(request.method, segments)
    if (found === undefined) {
      const error =
        segments === undefined
          ? new InvalidConsoleRequest({ message: "a path segment is not valid percent-encoding" })
          : new ConsoleRouteNotFound({ message: `no console route ${request.method} ${url.pathname}` })
      return json(statusOf(error), errorBody(error))
    }
    let caller: Awaited<ReturnType<typeof callerOf>>
    try {
      caller = await callerOf(request)
    } catch (cause) {
      // The application's `caller` refused what the request carries (a malformed token).
      const error = new ThreadClient.Unauthorized({
        entryPoint: "console",
        message: `the caller could not be read from the request: ${cause instanceof Error ? cause.message : String(cause)}`,
      })
      return json(statusOf(error), errorBody(error))
    }
    const exit = await Effect.runPromiseExit(
      found.route(
        {
          request,
          url,
          client: (object, threadId) =>
            // The routes name an Object by id only when `addressesIds` says the namespace can.
            ThreadClient.make(object.by === "id" && byId !== undefined ? byId : namespace, threadId, {
              objectName: object.key,
              ...(caller === undefined ? {} : { caller }),
            }),
          addressesIds: byId !== undefined,
          isObjectId,
          objects: async () => (options.objects === undefined ? [] : [...(await options.objects(request))]),
          namespaceBinding: options.namespaceBinding,
        },
        found.params,
      ),
    )
    if (Exit.isSuccess(exit)) return json(200, exit.value)
    const failure = exit.cause.reasons.find((reason) => reason._tag === "Fail")
    if (failure !== undefined) return json(statusOf(failure.error), errorBody(failure.error))
    return json(500, { error: "ConsoleFailure", message: "the console failed; see the Worker's log" })
  }

  const serve = async (request: Request): Promise<Response> => {
    const url = new URL(request.url)
    if (!matches(request)) {
      const error = new ConsoleRouteNotFound({ message: `${url.pathname} is not under ${base || "/"}` })
      return json(404, errorBody(error))
    }
    const rest = url.pathname.slice(base.length)
    const read = request.method === "GET" || request.method === "HEAD"
    if (rest === "" && read) return Response.redirect(`${url.origin}${base}/${url.search}`, 308)
    if (rest === "/" && read) return respond(page, 200, { "content-type": "text/html; charset=utf-8" })
    if (rest === "/console.js" && read) return asset(CONSOLE_SCRIPT, "text/javascript")
    if (rest === "/console.css" && read) return asset(CONSOLE_STYLE, "text/css")
    if (rest.startsWith("/api/")) return api(request, url, rest.slice("/api/".length))
    const error = new ConsoleRouteNotFound({ message: `no console route ${request.method} ${url.pathname}` })
    return json(404, errorBody(error))
  }

  return Object.assign(serve, { matches })
}
