/**
 * The persisted maintenance record of one physical Object, kept in Durable Object KV (not SQL)
 * so that the O(1) paths never touch the SQLite tables.
 *
 * Records written by older releases lack the optional keys and decode unchanged; a malformed
 * record throws `MaintenanceRecordDamaged` (naming the field) inside the storage transaction,
 * so nothing runs on it. Only `repairMaintenance` replaces it, rebuilt from the ledger with a
 * new generation: resetting it in place could acknowledge work that was never done.
 */
import { Exit, Schema, SchemaIssue } from "effect"
import { SubmissionId, ThreadId } from "../../core/Identifiers.ts"
import { safeCauseMessage } from "../boundary.ts"
import { MaintenanceRecordDamaged } from "./errors.ts"
import type { RecordTxn } from "./transaction.ts"

/** @internal The Durable Object KV key the maintenance record is stored under. */
export const MAINTENANCE_STATE_KEY = "effect-agent:thread-maintenance:v1"

const MaintenanceGeneration = Schema.BigIntFromString.check(Schema.isGreaterThanOrEqualToBigInt(0n))

/** @internal A per-Submission wait for a compatible agent binding. */
export class BindingRetry extends Schema.Class<BindingRetry>("BindingRetry")({
  threadId: ThreadId,
  submissionId: SubmissionId,
  attempts: Schema.Natural,
  notBefore: Schema.Finite,
  reportedAt: Schema.Finite,
  /** Why registered code with the same digest cannot run it (a replay that contradicts the journal, an input that no longer decodes). */
  reason: Schema.optionalKey(Schema.String),
}) {}

/** @internal The bounded backoff of a generation whose maintenance failed or stalled. */
export class MaintenanceRetry extends Schema.Class<MaintenanceRetry>("MaintenanceRetry")({
  generation: MaintenanceGeneration,
  notBefore: Schema.Finite,
  nativeOnly: Schema.Boolean,
  stalls: Schema.Int.check(Schema.isGreaterThanOrEqualTo(0), Schema.isLessThanOrEqualTo(30)),
}) {}

/**
 * @internal The maintenance record of one Object: the generations (`dirty > processed` means
 * maintenance is owed), the nonterminal count, the lane cursor, binding waits and the retry.
 */
export class ThreadMaintenanceState extends Schema.Class<ThreadMaintenanceState>(
  "@effect-agent/platform-cloudflare/ThreadMaintenanceState",
)({
  schemaVersion: Schema.Literal(1),
  /** Advanced by every recovery-invalidating mutation (a `bigint`, as `processed` is). */
  dirty: MaintenanceGeneration,
  /** The last generation a pass acknowledged. */
  processed: MaintenanceGeneration,
  /** Nonterminal Submissions as the last pass or repair counted them (`threadStatus` counts now). */
  nonterminal: Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)),
  /** Round-robin lane cursor. */
  lastServedThreadId: Schema.optionalKey(ThreadId),
  bindingRetries: Schema.optionalKey(Schema.Array(BindingRetry)),
  /** Made obsolete by any newer `dirty`. */
  retry: Schema.optionalKey(MaintenanceRetry),
  /**
   * A lower bound of every timed wait's due time (never later than the earliest by more than
   * `timerCoalesceMillis`): a pass at or after it is actionable, and the alarm covers it. Lowered
   * by any commit that could make it wrong, raised only by one that writes the record anyway
   * or that found nothing due at it.
   */
  nextDueAt: Schema.optionalKey(Schema.Finite),
}) {}

// Dirty on purpose: an Object older than the generation scheme gets one useful pass that
// classifies and acknowledges existing work, without a ledger scan in the constructor.
const bootstrap = ThreadMaintenanceState.make({
  schemaVersion: 1,
  dirty: 1n,
  processed: 0n,
  nonterminal: 0,
})

/**
 * @internal The record of a store that held nothing when its incarnation began (no table, no
 * key): no work can predate it, so it starts clean and owes no pass.
 */
export const freshRecord = ThreadMaintenanceState.make({ ...bootstrap, dirty: 0n })

const decodeExit = Schema.decodeUnknownExit(ThreadMaintenanceState)
const encodeState = Schema.encodeSync(ThreadMaintenanceState)

/** The path of the first problem of a decoding issue. */
const issuePath = (issue: SchemaIssue.Issue): ReadonlyArray<PropertyKey> => {
  switch (issue._tag) {
    case "Pointer":
      return [...issue.path, ...issuePath(issue.issue)]
    case "Filter":
    case "Encoding":
      return issuePath(issue.issue)
    case "Composite":
    case "AnyOf":
      return issue.issues[0] === undefined ? [] : issuePath(issue.issues[0])
    default:
      return []
  }
}

/** @internal Decodes a stored record, or names its first damaged field. */
export const decodeMaintenanceRecord = (
  raw: unknown,
): { readonly _tag: "Ok"; readonly state: ThreadMaintenanceState } | MaintenanceRecordDamaged => {
  const exit = decodeExit(raw)
  if (Exit.isSuccess(exit)) return { _tag: "Ok", state: exit.value }
  const error = exit.cause.reasons.find((reason) => reason._tag === "Fail")?.error
  const path = error === undefined ? [] : issuePath(error.issue)
  return new MaintenanceRecordDamaged({
    field: path.length === 0 ? "record" : path.map(String).join("."),
    message: `the maintenance record ${MAINTENANCE_STATE_KEY} does not decode: ${safeCauseMessage(error?.message ?? "", "unknown problem")}`,
  })
}

const decodeState = (raw: unknown): ThreadMaintenanceState => {
  const decoded = decodeMaintenanceRecord(raw)
  if (decoded._tag === "MaintenanceRecordDamaged") throw decoded
  return decoded.state
}

/** @internal */
export interface StoredState {
  readonly state: ThreadMaintenanceState
  readonly initialized: boolean
}

/** @internal Reads (or synthesizes) the record inside a storage transaction. */
export const readMaintenanceState = (txn: Pick<RecordTxn, "get">): StoredState => {
  const raw = txn.get(MAINTENANCE_STATE_KEY)
  return raw === undefined
    ? { state: bootstrap, initialized: false }
    : { state: decodeState(raw), initialized: true }
}

/** @internal */
export const writeMaintenanceState = (txn: Pick<RecordTxn, "put">, state: ThreadMaintenanceState): void =>
  txn.put(MAINTENANCE_STATE_KEY, encodeState(state))

/** @internal Whether two records encode the same. */
export const sameRecord = (a: ThreadMaintenanceState, b: ThreadMaintenanceState): boolean =>
  JSON.stringify(encodeState(a)) === JSON.stringify(encodeState(b))

/** @internal The retry that applies to the current dirty generation, if any. */
export const applicableRetry = (
  state: Pick<ThreadMaintenanceState, "dirty" | "retry">,
): MaintenanceRetry | undefined =>
  state.retry !== undefined && state.retry.generation === state.dirty ? state.retry : undefined
