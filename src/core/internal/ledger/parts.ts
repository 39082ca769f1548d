/**
 * The parts of a ledger service that each implementation (SQLite and in memory) builds apart
 * from its transitions.
 */
import type { SubmissionLedger } from "../../SubmissionLedger.ts"

type Service = typeof SubmissionLedger.Service

/** The answers from admission alone: a check without writing, and the row under a key. @internal */
export type KeyReads = Pick<Service, "checkAdmission" | "lookupByKey">

/** The reads that are not about admission. @internal */
export type LedgerReads = Pick<
  Service,
  | "lookup"
  | "head"
  | "countNonterminal"
  | "joinsOf"
  | "scanNonterminal"
  | "scanRecoveryCandidates"
  | "laneHeads"
  | "nextLaneHead"
  | "countAllNonterminal"
  | "scanAll"
  | "lanePage"
  | "threadIds"
  | "nextDue"
  | "earliestDue"
>

/** What retention reads and removes. @internal */
export type RetentionOps = Pick<
  Service,
  "retentionStart" | "retentionCandidates" | "deferRetention" | "removeSettled"
>
