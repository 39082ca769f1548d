/**
 * The admission capacity of a `ThreadObject`: new work is refused once the Object's database
 * holds `limits.maxDatabaseBytes`, below Cloudflare's own limit, so that every Submission already
 * accepted keeps room to settle.
 * @internal
 */
import { Effect, Layer } from "effect"
import { DurableObjectContext } from "../../CloudflareBindings.ts"
import { CloudflareDurableRuntimeConfig } from "../../CloudflareConfig.ts"
import { AdmissionRefused } from "../../core/internal/ledger/model.ts"
import { AdmissionCapacity } from "../../core/internal/runtime/admission/admissionCapacity.ts"

/** @internal */
export const databaseCapacityLayer = Layer.effect(
  AdmissionCapacity,
  Effect.gen(function* () {
    const { ctx } = yield* DurableObjectContext
    const { maxDatabaseBytes } = (yield* CloudflareDurableRuntimeConfig).limits
    return {
      check: (threadId) => {
        const bytes = ctx.storage.sql.databaseSize
        return bytes < maxDatabaseBytes
          ? Effect.void
          : Effect.fail(
              new AdmissionRefused({
                threadId,
                reason: "database-bytes",
                message: `the database holds ${bytes} bytes; new work is refused from ${maxDatabaseBytes}`,
              }),
            )
      },
    }
  }),
)
