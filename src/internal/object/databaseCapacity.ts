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

/**
 * Reading `databaseSize` costs about 0.2 ms in workerd, a tenth of a lone submit's work. Far
 * below the limit it is read again only after up to `MAX_SKIPPED` further checks, fewer as the
 * room left shrinks (one check per `BYTES_PER_SKIP` of room), so near the limit every check reads
 * it; what a few Submissions write between two reads stays inside the margin the limit keeps
 * below Cloudflare's own.
 */
const MAX_SKIPPED = 32
const BYTES_PER_SKIP = 8_000_000

/** @internal */
export const databaseCapacityLayer = Layer.effect(
  AdmissionCapacity,
  Effect.gen(function* () {
    const { ctx } = yield* DurableObjectContext
    const { maxDatabaseBytes } = (yield* CloudflareDurableRuntimeConfig).limits
    let skip = 0
    return {
      check: (threadId) => {
        if (skip > 0) {
          skip -= 1
          return Effect.void
        }
        const bytes = ctx.storage.sql.databaseSize
        if (bytes < maxDatabaseBytes) {
          skip = Math.min(MAX_SKIPPED, Math.floor((maxDatabaseBytes - bytes) / BYTES_PER_SKIP))
          return Effect.void
        }
        return Effect.fail(
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
