/**
 * The messages a settlement owes other Objects, as pure functions of the settling row and its
 * journal: a child's settlement marker for its parent, and an aborted parent's aborts for the
 * children it started that have not settled. `settle` enqueues them in its own transaction.
 */
import type { SubmissionId } from "../../../Identifiers.ts"
import type { Settlement, SubmissionSnapshot } from "../../ledger/model.ts"
import { messageIds, type NewMessage } from "../../outbox/model.ts"
import type { Journal } from "../shared/journal.ts"

/** The marker a child with a parent sends when it settles. @internal */
export const settlementMarker = (
  row: Pick<SubmissionSnapshot, "submissionId" | "idempotencyKey" | "parent">,
  settlement: Settlement,
): ReadonlyArray<NewMessage> =>
  row.parent === undefined
    ? []
    : [
        {
          messageId: messageIds.childSettled(row.submissionId),
          target: row.parent.address,
          message: {
            _tag: "ChildSettled",
            parentSubmissionId: row.parent.submissionId,
            step: row.parent.step,
            childSubmissionId: row.submissionId,
            childIdempotencyKey: row.idempotencyKey,
            outcome: settlement.outcome,
            ...(settlement.output === undefined ? {} : { output: settlement.output }),
            ...(settlement.error === undefined ? {} : { error: settlement.error }),
          },
        },
      ]

/**
 * The aborts an aborted parent sends to the children it started that have not settled; each
 * waits for its child's admission to be acknowledged.
 * @internal
 */
export const childAborts = (parentId: SubmissionId, journal: Journal): ReadonlyArray<NewMessage> =>
  [...journal.positions.entries()].flatMap(([step, position]) => {
    const started = position.childStarted
    if (started === undefined || journal.childSettled.has(step)) return []
    return [
      {
        messageId: messageIds.abortChild(parentId, step),
        target: started.target,
        message: { _tag: "AbortChild", threadId: started.threadId, idempotencyKey: started.idempotencyKey },
        dependsOn: messageIds.admitChild(parentId, step),
      } satisfies NewMessage,
    ]
  })
