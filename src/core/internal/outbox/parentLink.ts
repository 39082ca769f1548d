/**
 * Addresses of Objects and the link from a child Submission to its parent. Kept apart so the
 * ledger (which stores the link) and the outbox (which sends to addresses) share them without
 * a cycle.
 */
import { Schema } from "effect"
import { SubmissionId, ThreadId } from "../../Identifiers.ts"

const Name = (what: string) =>
  Schema.String.check(
    Schema.isNonEmpty({ expected: `a non-empty ${what}` }),
    Schema.isMaxLength(256, { expected: `a ${what} of at most 256 characters` }),
  )

/** The name an Object is reached by (`getByName`): 1 to 256 characters. */
export const ObjectName = Name("object name")

/**
 * Where an Object lives: the name of the Worker binding of its namespace, and either its id
 * (`DurableObjectId.toString()`) or the name it is reached by (`getByName`).
 */
export const ObjectAddress = Schema.Struct({
  namespace: Name("namespace binding name"),
  objectId: Schema.optionalKey(Name("object id")),
  objectName: Schema.optionalKey(Name("object name")),
}).check(
  Schema.makeFilter((address) => (address.objectId === undefined) !== (address.objectName === undefined), {
    expected: "an address with exactly one of objectId and objectName",
  }),
)
export type ObjectAddress = typeof ObjectAddress.Type

/** The parent of a child Submission: where its settlement marker goes. */
export const ParentLink = Schema.Struct({
  address: ObjectAddress,
  threadId: ThreadId,
  submissionId: SubmissionId,
  /** The call position of `startChild` in the parent's journal. */
  step: Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)),
})
export type ParentLink = typeof ParentLink.Type
