/**
 * The progress hub of one incarnation: every write that settles or moves a Submission publishes
 * its id, and a waiter on that Submission (`awaitSettlement`, `awaitProgress`) reads it again at
 * once instead of at its next poll. It lives in memory only, so a write by another incarnation
 * is not published here: the waiters' poll stays as the fallback, and liveness never depends on
 * a publication. The default hub publishes nothing; a host that wants wakes provides `layer`
 * to the ledger, the history and the runtime it builds.
 */
import { Context, Layer } from "effect"
import type { Effect, Scope } from "effect"
import type { SubmissionId } from "./Identifiers.ts"
import { inertProgressHub, makeProgressHub } from "./internal/progress/hub.ts"

/** A waiter's interest in one Submission, held for the scope it was opened in. */
export interface ProgressWatch {
  /**
   * Returns once the Submission was published since the watch opened or since the previous
   * call returned, or after `millis`, whichever comes first.
   */
  readonly next: (millis: number) => Effect.Effect<void>
}

/** What the progress hub does. */
export interface ProgressHubService {
  /**
   * Wakes the waiters of a Submission that a write just settled or moved; never fails. With
   * `settles: false` (a Claim, a park, a journal record: the write cannot have settled it) a
   * waiter for the settlement alone sleeps on.
   */
  readonly publish: (
    submissionId: SubmissionId,
    publication?: { readonly settles?: boolean },
  ) => Effect.Effect<void>
  /**
   * Registers a waiter on a Submission until the scope closes (a timeout or an interrupt); with
   * `settlementOnly` (`awaitSettlement`) only writes that may settle it wake it.
   */
  readonly watch: (
    submissionId: SubmissionId,
    interest?: { readonly settlementOnly?: boolean },
  ) => Effect.Effect<ProgressWatch, never, Scope.Scope>
  /** How many Submissions have a waiter now (none is held for a Submission nobody waits on). */
  readonly watched: Effect.Effect<number>
}

/** The progress hub of this incarnation. */
export class ProgressHub extends Context.Reference<ProgressHubService>(
  "@effect-agent/platform-cloudflare/ProgressHub",
  { defaultValue: () => inertProgressHub },
) {
  /** A live hub for one incarnation. */
  static readonly layer: Layer.Layer<never> = Layer.sync(ProgressHub, makeProgressHub)
}
