/**
 * Records that arrived for a Submission before it was admitted (an event sent to the key it is
 * admitted under, kept by the host until then): the SQLite ledger asks for them in the
 * admission's own transaction and records them with the acceptance, so they are delivered once,
 * with the Submission, or not at all. None by default: an admission then runs no statement more.
 */
import { Context, Effect } from "effect"
import type { HistoryEntry } from "../history/model.ts"
import type { LedgerError, SubmissionSnapshot } from "./model.ts"

/** @internal */
export interface AdmissionArrivalsService {
  /**
   * The input records kept for `admitted`, removed from where they were kept; runs inside the
   * admission's storage transaction, so it must not wait for anything (its statements are
   * synchronous).
   */
  readonly take: (admitted: SubmissionSnapshot) => Effect.Effect<ReadonlyArray<HistoryEntry>, LedgerError>
}

const none: AdmissionArrivalsService = { take: () => Effect.succeed([]) }

/** @internal */
export class AdmissionArrivals extends Context.Reference<AdmissionArrivalsService>(
  "@effect-agent/platform-cloudflare/AdmissionArrivals",
  { defaultValue: () => none },
) {}
