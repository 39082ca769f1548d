/**
 * Whether the host has room for new Submissions. A host whose storage has a hard limit refuses
 * new work before reaching it, so that every Submission it accepted keeps room to settle; every
 * new admission asks, whoever makes it (a submit, a join, a parent starting a child). A replay
 * of an admitted key adds nothing and is not asked.
 * @internal
 */
import { Context, Effect } from "effect"
import type { ThreadId } from "../../../Identifiers.ts"
import type { AdmissionRefused } from "../../ledger/model.ts"

/** @internal */
export interface AdmissionCapacityService {
  /** Fails with `database-bytes` (or another reason) when no new work fits. */
  readonly check: (threadId: ThreadId) => Effect.Effect<void, AdmissionRefused>
}

/** No limit by default: an in-memory or unbounded store has room. @internal */
export const AdmissionCapacity = Context.Reference<AdmissionCapacityService>(
  "@effect-agent/platform-cloudflare/AdmissionCapacity",
  { defaultValue: () => ({ check: () => Effect.void }) },
)
