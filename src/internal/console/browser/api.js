// @ts-check
// The console's JSON API: every request carries the operator token the page was given (as a
// bearer token; the Worker passes it to the Object, whose check decides), and a refusal comes
// back as the typed error the Object or the console answered.
import { pathSegment } from "./refs.js"

/** The console's mount path, from the page the Worker served. */
export const BASE = document.querySelector('meta[name="console-base"]')?.getAttribute("content") ?? ""

/** Where the page keeps the token for this tab only. */
export const TOKEN_KEY = "effect-agent-console-token"

/** A typed error as the console answers it. */
export class ConsoleError extends Error {
  /**
   * @param {number} status
   * @param {{ error?: string, message?: string, entryPoint?: string, reason?: string }} body
   */
  constructor(status, body) {
    super(body.message ?? `HTTP ${status}`)
    this.status = status
    this.tag = body.error ?? `HTTP ${status}`
    this.reason = body.reason
  }
}

export function operatorToken() {
  return sessionStorage.getItem(TOKEN_KEY) ?? ""
}

/**
 * Calls the console's API: `path` under `<base>/api/`, a JSON body for actions.
 * @param {"GET" | "POST"} method
 * @param {string} path
 * @param {{ body?: unknown, signal?: AbortSignal }} [options]
 * @returns {Promise<any>}
 */
export async function api(method, path, options = {}) {
  /** @type {Record<string, string>} */
  const headers = { accept: "application/json" }
  const token = operatorToken()
  if (token !== "") headers["authorization"] = `Bearer ${token}`
  if (options.body !== undefined) headers["content-type"] = "application/json"
  const response = await fetch(`${BASE}/api/${path}`, {
    method,
    headers,
    credentials: "same-origin",
    ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
    ...(options.signal === undefined ? {} : { signal: options.signal }),
  })
  const body = await response.json().catch(() => undefined)
  if (!response.ok) throw new ConsoleError(response.status, body ?? {})
  return body
}

/**
 * An API path of segments, each written by `pathSegment`.
 * @param {Array<string>} segments
 */
export function apiPath(...segments) {
  return segments.map(pathSegment).join("/")
}

/**
 * A query string of the defined parameters.
 * @param {Record<string, string | number | undefined>} params
 */
export function query(params) {
  const search = new URLSearchParams()
  for (const [name, value] of Object.entries(params))
    if (value !== undefined && value !== "") search.set(name, String(value))
  const text = search.toString()
  return text === "" ? "" : `?${text}`
}
