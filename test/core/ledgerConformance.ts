/**
 * The conformance suite of the Submission Ledger, run against every implementation.
 *
 * A harness runs each case against a fresh, empty ledger and history (for SQLite: a fresh
 * Durable Object), optionally with admission limits. Time is explicit: every operation takes
 * `now`, so cases state the instants they mean.
 */
import { describe } from "@effect/vitest"
import { admissionCases } from "./SubmissionLedgerAdmissionCases.ts"
import { delayedCases } from "./SubmissionLedgerDelayedCases.ts"
import { earlyCases } from "./SubmissionLedgerEarlyCases.ts"
import { fencingCases } from "./SubmissionLedgerFencingCases.ts"
import { linkCases } from "./SubmissionLedgerLinkCases.ts"
import { operatorReadCases } from "./SubmissionLedgerOperatorCases.ts"
import { pageCases } from "./SubmissionLedgerPageCases.ts"
import { passReadCases } from "./SubmissionLedgerPassCases.ts"
import { retentionCases } from "./SubmissionLedgerRetentionCases.ts"
import { scheduleCases } from "./SubmissionLedgerScheduleCases.ts"
import { timedCases } from "./SubmissionLedgerTimedCases.ts"
import type { LedgerHarness } from "./SubmissionLedgerFixtures.ts"

export type { LedgerHarness } from "./SubmissionLedgerFixtures.ts"
export { historyConformance } from "./ThreadHistoryConformance.ts"

/** Registers the ledger cases for one implementation. */
export const ledgerConformance = (name: string, harness: LedgerHarness) =>
  describe(`SubmissionLedger conformance (${name})`, () => {
    admissionCases(harness)
    fencingCases(harness)
    passReadCases(harness)
    linkCases(harness)
    operatorReadCases(harness)
    retentionCases(harness)
    pageCases(harness)
    timedCases(harness)
    delayedCases(harness)
    scheduleCases(harness)
    earlyCases(harness)
  })
