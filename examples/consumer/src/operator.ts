import { Effect } from "effect"
import { DurableObjectContext } from "@effect-agent/platform-cloudflare/CloudflareBindings"
import { Unauthorized } from "@effect-agent/platform-cloudflare/ThreadClient"
import type { AuthorizationCheck } from "@effect-agent/platform-cloudflare/ThreadObject"

declare global {
  namespace Cloudflare {
    interface Env {
      /** The operators' bearer token: `npx wrangler secret put OPERATOR_TOKEN`. */
      readonly OPERATOR_TOKEN?: string
    }
  }
}

const encoder = new TextEncoder()

/** Compares two secrets without revealing where they differ. */
const sameSecret = (given: string, expected: string) => {
  const [a, b] = [encoder.encode(given), encoder.encode(expected)]
  return a.byteLength === b.byteLength && crypto.subtle.timingSafeEqual(a, b)
}

/**
 * Every call passes this check with its kind. Reads and submissions are open; the operator
 * actions (kind `operate`: approve or deny, resolve an Unknown Outcome, abort, retry, forget,
 * repair) are for operators: the caller the Worker vouches for must present the
 * `OPERATOR_TOKEN` secret. Without the secret nobody is an operator.
 */
export const operatorsOnly: AuthorizationCheck = ({ caller, entryPoint, kind }) =>
  Effect.gen(function* () {
    if (kind !== "operate") return
    const { env } = yield* DurableObjectContext
    const token = env.OPERATOR_TOKEN
    if (token !== undefined && caller?.credential !== undefined && sameSecret(caller.credential, token))
      return
    return yield* new Unauthorized({ entryPoint, message: `${entryPoint} is for operators` })
  })
