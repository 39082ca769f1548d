/**
 * The boundary decode of every request an Object receives, a client's call or another Object's
 * routed request alike: a size bound first (a request far over the input limit is refused
 * before it is parsed), then its Schema. A refusal names the entry point and the problem.
 */
import { Effect, Schema } from "effect"
import { CloudflareDurableRuntimeConfig } from "../../CloudflareConfig.ts"
import { InvalidRequest } from "./callErrors.ts"

/**
 * How far a raw request may exceed `limits.maxInputBytes` before decoding, in UTF-16 units: the
 * envelope around an input (ids, keys). The input itself is measured once, when it is prepared.
 */
const REQUEST_OVERHEAD_CHARS = 65_536

/**
 * The size bound of a routed request from another Object, in UTF-16 units. Such a request is a
 * row of its sender's outbox, so it fits the 2 MB SQLite row Cloudflare allows; what it carries
 * was bounded by its sender's limits (a child's output by the child's `maxStoredValueBytes`),
 * which need not be this Object's. A child's input over this Object's limit is decoded and then
 * refused by name (`input-bytes`). @internal
 */
export const ROUTED_REQUEST_MAX_CHARS = 2_000_000 + REQUEST_OVERHEAD_CHARS

/**
 * The request without its top-level keys whose value is `undefined`, as its JSON has them: an
 * option a caller spells `overlap: undefined` (which TypeScript accepts for an optional field
 * unless `exactOptionalPropertyTypes` is on) is absent, not a value of the wrong type.
 */
const withoutUndefined = (raw: unknown): unknown => {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return raw
  const entries = Object.entries(raw)
  return entries.every(([, value]) => value !== undefined)
    ? raw
    : Object.fromEntries(entries.filter(([, value]) => value !== undefined))
}

/**
 * @internal Decodes a raw request for `entryPoint` with `schema`, refusing one whose JSON is over
 * `maxChars` (by default `limits.maxInputBytes` + `REQUEST_OVERHEAD_CHARS`) before parsing it. A
 * top-level key whose value is `undefined` is absent, as in the request's JSON.
 */
export const decodeRequest =
  <A, I>(entryPoint: string, schema: Schema.Codec<A, I>, maxChars?: number) =>
  (raw: unknown): Effect.Effect<A, InvalidRequest, CloudflareDurableRuntimeConfig> =>
    Effect.gen(function* () {
      const limit =
        maxChars ?? (yield* CloudflareDurableRuntimeConfig).limits.maxInputBytes + REQUEST_OVERHEAD_CHARS
      let size: number
      try {
        size = JSON.stringify(raw)?.length ?? 0
      } catch {
        return yield* new InvalidRequest({ entryPoint, message: "the request is not JSON-serializable" })
      }
      if (size > limit) {
        return yield* new InvalidRequest({
          entryPoint,
          message: `the request is ${size} characters, over the limit of ${limit}`,
        })
      }
      return yield* Schema.decodeUnknownEffect(schema)(withoutUndefined(raw)).pipe(
        Effect.mapError((error) => new InvalidRequest({ entryPoint, message: error.message })),
      )
    })
