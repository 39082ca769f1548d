/**
 * The console's HTTP answers: JSON bodies, the status that names a typed error's kind, and
 * the headers every answer carries. The Content-Security-Policy allows only the Worker's own
 * script, stylesheet and JSON (no inline script or style, nothing from another origin): the
 * page builds its DOM with `textContent`, so a stored value can only ever show as text.
 */

/**
 * The Content-Security-Policy every console answer carries: the Worker's own script, stylesheet
 * and JSON only, no inline script or style, no frames.
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self' data:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ")

const SECURITY_HEADERS: Record<string, string> = {
  "content-security-policy": CONTENT_SECURITY_POLICY,
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "cross-origin-opener-policy": "same-origin",
}

/** An answer with the console's headers. @internal */
export const respond = (body: BodyInit | null, status: number, headers: Record<string, string>) =>
  new Response(body, { status, headers: { ...SECURITY_HEADERS, ...headers } })

/** A JSON answer; never cached, since it shows live state. @internal */
export const json = (status: number, value: unknown) =>
  respond(
    JSON.stringify(value, (_key, inner: unknown) => (typeof inner === "bigint" ? inner.toString() : inner)),
    status,
    { "content-type": "application/json; charset=utf-8", "cache-control": "no-store" },
  )

/** A typed error as the console answers it: its tag, message and the fields that say more. @internal */
export const errorBody = (error: { readonly _tag: string; readonly message: string }) => ({
  error: error._tag,
  message: error.message,
  ...("entryPoint" in error && typeof error.entryPoint === "string" ? { entryPoint: error.entryPoint } : {}),
  ...("reason" in error && typeof error.reason === "string" ? { reason: error.reason } : {}),
})

/** The HTTP status of a typed error: what kind of problem it is. @internal */
export const statusOf = (error: { readonly _tag: string; readonly reason?: unknown }): number => {
  switch (error._tag) {
    case "InvalidRequest":
    case "InvalidConsoleRequest":
      return 400
    case "Unauthorized":
      return 403
    case "SubmissionNotFound":
    case "ConsoleRouteNotFound":
      return 404
    case "NotPending":
    case "ForgetRefused":
      return 409
    case "EventRefused":
      // The payload is the request's fault; a settled or joined Submission is its state's.
      return error.reason === "malformed-payload" || error.reason === "payload-bytes" ? 400 : 409
    case "ThreadObjectFailure":
      return error.reason === "conflict" ? 409 : 500
    case "ConsoleActionUnavailable":
      return 501
    case "ObjectDirectoryFailed":
      return 502
    case "ThreadObjectUnavailable":
    case "MaintenanceRecordDamaged":
      return 503
    default:
      return 500
  }
}
