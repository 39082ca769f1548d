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

/** @internal Decodes a raw request for `entryPoint` with `schema`. */
export const decodeRequest =
  <A, I>(entryPoint: string, schema: Schema.Codec<A, I>) =>
  (raw: unknown): Effect.Effect<A, InvalidRequest, CloudflareDurableRuntimeConfig> =>
    Effect.gen(function* () {
      const maxBytes = (yield* CloudflareDurableRuntimeConfig).limits.maxInputBytes
      let size: number
      try {
        size = JSON.stringify(raw)?.length ?? 0
      } catch {
        return yield* new InvalidRequest({ entryPoint, message: "the request is not JSON-serializable" })
      }
      if (size > maxBytes + REQUEST_OVERHEAD_CHARS) {
        return yield* new InvalidRequest({
          entryPoint,
          message: `the request is ${size} characters, over the limit of ${maxBytes + REQUEST_OVERHEAD_CHARS}`,
        })
      }
      return yield* Schema.decodeUnknownEffect(schema)(raw).pipe(
        Effect.mapError((error) => new InvalidRequest({ entryPoint, message: error.message })),
      )
    })
