/**
 * The example's HTTP routes. Each route is one `ThreadClient` call; typed errors become JSON
 * bodies with an HTTP status that names the kind of problem. A request's
 * `Authorization: Bearer <token>` travels as the caller's credential; the Thread Object's
 * authorization check decides the privileged routes (approve, deny, resolve, abort, retry, forget,
 * repair).
 */
import { Effect, Schema } from "effect"
import * as ThreadClient from "@effect-agent/platform-cloudflare/ThreadClient"

type Client = ThreadClient.ThreadClient
type Route = (
  client: Client,
  body: unknown,
  url: URL,
) => Effect.Effect<unknown, ThreadClient.ThreadClientError>

const statusOf = (error: ThreadClient.ThreadClientError): number => {
  switch (error._tag) {
    case "InvalidRequest":
      return 400
    case "AdmissionRefused":
      switch (error.reason) {
        case "queue-depth":
          return 429
        case "input-bytes":
          return 413
        case "database-bytes":
          return 507
        default:
          return 400
      }
    case "SubmissionNotFound":
      return 404
    case "NotPending":
    case "IdempotencyConflict":
    case "JoinRefused":
    case "ForgetRefused":
      return 409
    case "ThreadObjectFailure":
      // A concurrent change won: the request may be repeated.
      return error.reason === "conflict" ? 409 : 500
    case "SettlementTimeout":
      return 408
    case "Unauthorized":
      return 403
    case "ThreadObjectUnavailable":
    case "MaintenanceRecordDamaged":
      return 503
    default:
      return 500
  }
}

const json = (status: number, value: unknown) =>
  new Response(
    JSON.stringify(
      value,
      (_key, inner: unknown) => (typeof inner === "bigint" ? inner.toString() : inner),
      2,
    ) + "\n",
    {
      status,
      headers: { "content-type": "application/json" },
    },
  )

const field = (body: unknown, key: string): unknown =>
  typeof body === "object" && body !== null ? (body as Record<string, unknown>)[key] : undefined

/**
 * A field as the request gave it, or `otherwise` when it is absent: the Object checks every field
 * of a call and refuses a malformed one as `InvalidRequest` naming it, so a route passes what it
 * was given rather than dropping what it does not recognize.
 */
const given = <A>(body: unknown, key: string, otherwise: A): A => (field(body, key) ?? otherwise) as A

const submit: Route = (client, body) => {
  const mode = field(body, "mode")
  return client.submit({
    agentId: given(body, "agentId", "refund"),
    idempotencyKey: given(body, "idempotencyKey", crypto.randomUUID()),
    input: given<Schema.Json>(body, "input", null),
    ...(mode === undefined ? {} : { mode: given<ThreadClient.SubmitMode>(body, "mode", "queue") }),
  })
}

const decide =
  (approved: boolean): Route =>
  (client, body, url) => {
    const note = field(body, "note")
    return client.resolveApproval(submissionOf(url), {
      approved,
      ...(note === undefined ? {} : { note: given(body, "note", "") }),
    })
  }

/** An Unknown Outcome's resolution: `succeeded` must say which, since it decides whether money moved. */
const resolve: Route = (client, body, url) => {
  const succeeded = field(body, "succeeded")
  if (typeof succeeded !== "boolean")
    return Effect.fail(
      new ThreadClient.InvalidRequest({
        entryPoint: "resolveUnknown",
        message: `succeeded must be true or false, got ${JSON.stringify(succeeded) ?? "nothing"}`,
      }),
    )
  return client.resolveUnknown(
    submissionOf(url),
    succeeded
      ? { _tag: "Succeeded", value: given<Schema.Json>(body, "value", null) }
      : {
          _tag: "Failed",
          message: given(body, "message", "the operator reports the effect did not happen"),
        },
  )
}

const submissionOf = (url: URL) => decodeURIComponent(url.pathname.split("/")[4] ?? "")

/** `METHOD /threads/:thread/<rest>` → route. */
const routes: Record<string, Route> = {
  "POST submissions": submit,
  "GET submission": (client, _body, url) => client.status(submissionOf(url)),
  "GET settlement": (client, _body, url) =>
    client.awaitSettlement(submissionOf(url), Number(url.searchParams.get("timeoutMillis") ?? 10_000)),
  "POST approve": decide(true),
  "POST deny": decide(false),
  "POST resolve": resolve,
  "POST abort": (client, _body, url) => client.abort(submissionOf(url)),
  "POST retry": (client, _body, url) => client.retry(submissionOf(url)),
  "POST forget": (client, _body, url) => client.forget(submissionOf(url)),
  "GET thread": (client) => client.threadStatus,
  "GET history": (client, _body, url) =>
    client.history({
      ...(url.searchParams.has("after") ? { after: Number(url.searchParams.get("after")) } : {}),
      limit: Number(url.searchParams.get("limit") ?? 50),
    }),
  "GET maintenance": (client) => client.inspectMaintenance,
  "GET submissions": (client, _body, url) =>
    client.submissions({
      ...(url.searchParams.has("after") ? { after: Number(url.searchParams.get("after")) } : {}),
      limit: Number(url.searchParams.get("limit") ?? 50),
    }),
  "GET explain": (client, _body, url) => client.explain(submissionOf(url)),
  "GET progress": (client, _body, url) => {
    const after = url.searchParams.get("after")
    return client.awaitProgress(submissionOf(url), {
      ...(after === null ? {} : { after }),
      timeoutMillis: Number(url.searchParams.get("timeoutMillis") ?? 0),
    })
  },
  "GET obligations": (client) => client.obligations,
  "GET verify": (client) => client.verify,
  "POST wake": (client) => client.wake,
  "POST repair": (client) => client.repairMaintenance,
}

/** The route key of a Thread path: `/threads/t`, `/threads/t/history`, `/threads/t/submissions/s/approve`, … */
const routeKey = (method: string, parts: ReadonlyArray<string>): string | undefined => {
  const [, , , collection, , action] = parts
  if (parts.length === 3) return `${method} thread`
  if (parts.length === 4) return `${method} ${collection}`
  // Nothing after the action: `…/approve/extra` is no route, not an approval.
  if (collection !== "submissions" || parts.length > 6) return undefined
  return `${method} ${action ?? "submission"}`
}

/**
 * A POST's JSON body: an empty one reads as `{}` (`curl -X POST` with no data), and one that is
 * not JSON is refused rather than taken for an empty object.
 */
const readBody = (request: Request) =>
  Effect.promise(async () => {
    const text = await request.text()
    if (text.trim() === "") return { _tag: "Read" as const, value: {} as unknown }
    try {
      return { _tag: "Read" as const, value: JSON.parse(text) as unknown }
    } catch (cause) {
      return { _tag: "NotJson" as const, problem: cause instanceof Error ? cause.message : String(cause) }
    }
  })

const noBody = { _tag: "Read" as const, value: undefined as unknown }

/** A path segment decoded, or `undefined` when it is not valid percent-encoding (`%E0%A4%A`). */
export const segmentOf = (segment: string): string | undefined => {
  try {
    return decodeURIComponent(segment)
  } catch {
    return undefined
  }
}

/** Serves `/threads/...`; `undefined` when the path is not a Thread route. */
export const threadRoute = (request: Request, namespace: ThreadClient.ThreadNamespace) =>
  Effect.gen(function* () {
    const url = new URL(request.url)
    const parts = url.pathname.replace(/\/+$/, "").split("/")
    if (parts[1] !== "threads" || parts[2] === undefined) return undefined
    const noRoute = () =>
      json(404, { error: "RouteNotFound", message: `no route ${request.method} ${url.pathname}` })
    // `/threads//history` names no Thread.
    if (parts[2] === "") return parts.length === 3 ? undefined : noRoute()
    // Ids are user data: one that does not decode is refused here, so the routes' decoding
    // below cannot throw (a throw would answer 500 with a stack).
    const undecodable = parts.find((part) => segmentOf(part) === undefined)
    if (undecodable !== undefined)
      return json(400, {
        error: "InvalidRequest",
        message: `the path segment ${JSON.stringify(undecodable)} is not valid percent-encoding`,
      })
    const key = routeKey(request.method, parts)
    const route = key === undefined ? undefined : routes[key]
    if (route === undefined) return noRoute()
    const body = request.method === "POST" ? yield* readBody(request) : noBody
    if (body._tag === "NotJson")
      return json(400, { error: "InvalidRequest", message: `the request body is not JSON: ${body.problem}` })
    const object = url.searchParams.get("object")
    const token = /^Bearer (.+)$/i.exec(request.headers.get("authorization") ?? "")?.[1]
    const client = ThreadClient.make(namespace, decodeURIComponent(parts[2]), {
      ...(object === null || object === "" ? {} : { objectName: object }),
      ...(token === undefined ? {} : { caller: { subject: "bearer", credential: token } }),
    })
    return yield* route(client, body.value, url).pipe(
      Effect.match({
        onSuccess: (value) => json(200, value ?? { ok: true }),
        onFailure: (error) =>
          json(statusOf(error), {
            error: error._tag,
            message: error.message,
            // Why, where the error says (ForgetRefused's `not-settled`, AdmissionRefused's `queue-depth`…).
            ...("reason" in error && typeof error.reason === "string" ? { reason: error.reason } : {}),
          }),
      }),
    )
  })

export { json }
