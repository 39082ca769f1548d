/**
 * Branded identifiers shared by the ledger, the history and the runtime.
 *
 * Every identifier is an opaque, non-empty string of at most 256 UTF-16 code units with no
 * control characters and no lone surrogate (SQLite stores text as UTF-8, where a lone surrogate
 * becomes U+FFFD: the stored id would not be the one sent). Decoding at a boundary fails with a
 * `SchemaError` that names the check.
 */
import { Schema } from "effect"
import { isWellFormed } from "./internal/wellFormed.ts"

/** Longest accepted identifier, in UTF-16 code units. */
export const MAX_IDENTIFIER_LENGTH = 256

// C0 controls, DEL and C1 controls: matching them is the point.
// oxlint-disable-next-line no-control-regex
const controlCharacters = /[\u0000-\u001f\u007f-\u009f]/

const identifier = <const B extends string>(brand: B) =>
  Schema.String.check(
    Schema.isNonEmpty({ expected: `a non-empty ${brand}` }),
    Schema.isMaxLength(MAX_IDENTIFIER_LENGTH, {
      expected: `a ${brand} of at most ${MAX_IDENTIFIER_LENGTH} characters`,
    }),
    Schema.makeFilter((value: string) => !controlCharacters.test(value), {
      expected: `a ${brand} without control characters`,
    }),
    Schema.makeFilter(isWellFormed, { expected: `a ${brand} without a lone surrogate` }),
  ).pipe(Schema.brand<B>(brand as never))

/** A Thread: one FIFO lane of Submissions and its canonical history. */
export const ThreadId = identifier("ThreadId")
export type ThreadId = typeof ThreadId.Type

/** One accepted input of a Thread. */
export const SubmissionId = identifier("SubmissionId")
export type SubmissionId = typeof SubmissionId.Type

/** A registered agent definition. */
export const AgentId = identifier("AgentId")
export type AgentId = typeof AgentId.Type

/** One ownership period of a Submission. */
export const AttemptId = identifier("AttemptId")
export type AttemptId = typeof AttemptId.Type

/** The durable identity returned to the submitter. */
export const ReceiptId = identifier("ReceiptId")
export type ReceiptId = typeof ReceiptId.Type

/** The caller's key that makes admission idempotent within a Thread. */
export const IdempotencyKey = identifier("IdempotencyKey")
export type IdempotencyKey = typeof IdempotencyKey.Type

/** The secret an Attempt presents with every fenced write. */
export const OwnershipToken = identifier("OwnershipToken")
export type OwnershipToken = typeof OwnershipToken.Type

/** Decodes an unknown value as a ThreadId, failing with a typed `SchemaError`. */
export const decodeThreadId = Schema.decodeUnknownEffect(ThreadId)
/** Decodes an unknown value as a SubmissionId, failing with a typed `SchemaError`. */
export const decodeSubmissionId = Schema.decodeUnknownEffect(SubmissionId)
