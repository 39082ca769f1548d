/**
 * The writes of an admission: the ledger row (its limits and the idempotency key checked again
 * in its transaction, with `SubmissionAccepted` recorded in the same one), the receipt, and the
 * finishing of a row an older release left `admitted` between those writes. A submit, a join
 * and a parent starting a child all admit through here.
 */
import { Clock, Effect, type Schema } from "effect"
import type { SubmissionId } from "../../../Identifiers.ts"
import { type AdmissionCheck, LedgerError, type SubmissionSnapshot } from "../../ledger/model.ts"
import { unownedFence } from "../../ledger/rules.ts"
import type { ParentLink } from "../../outbox/parentLink.ts"
import { Receipt } from "../shared/model.ts"
import { loadJournal, type RuntimeEnv, vanished } from "../shared/runtimeEnv.ts"

const parsePayload = (operation: string, row: SubmissionSnapshot) =>
  Effect.try({
    try: () => JSON.parse(row.inputPayload) as Schema.Json,
    catch: (cause) =>
      new LedgerError({ operation, message: `stored input of ${row.submissionId} is not JSON`, cause }),
  })

/**
 * Finishes a row an older release left `admitted`: records `SubmissionAccepted` unless the
 * history holds it, then marks the row ready. Callers hold the runtime's lock, so a replayed
 * submit and recovery never both record the acceptance. Recovery, which read the journal,
 * passes `accepted`.
 * @internal
 */
export const materialize = (
  env: RuntimeEnv,
  row: SubmissionSnapshot,
  known?: { readonly accepted: boolean },
) =>
  Effect.gen(function* () {
    const operation = "DurableAgentRuntime.materialize"
    const accepted = known?.accepted ?? (yield* loadJournal(env, row.submissionId)).accepted
    const now = yield* Clock.currentTimeMillis
    if (!accepted) {
      const fence = unownedFence(row, now, env.incarnation)
      const input = yield* parsePayload(operation, row)
      yield* env.history
        .append(
          row.submissionId,
          { _tag: "SubmissionAccepted", agentId: row.agentId, agentDigest: row.agentDigest, input },
          fence,
          now,
        )
        .pipe(Effect.catchTag("SubmissionNotFound", (missing) => Effect.fail(vanished(operation)(missing))))
    }
    // A row that moved on (an accepted abort settled it meanwhile) needs no readiness.
    yield* env.ledger.markReady(row.submissionId, now).pipe(
      Effect.catchTag("InvalidTransition", () => Effect.void),
      Effect.catchTag("SubmissionNotFound", (missing) => Effect.fail(vanished(operation)(missing))),
    )
  })

/**
 * Writes the admission of a checked Submission (the ledger checks its limits again in its
 * transaction), linked to a parent or joining a host if asked. @internal
 */
export const admitRow = Effect.fnUntraced(function* (
  env: RuntimeEnv,
  checkedAdmission: AdmissionCheck,
  link: { readonly parent?: ParentLink; readonly host?: SubmissionId } = {},
) {
  const now = yield* Clock.currentTimeMillis
  return yield* env.ledger.admit({
    threadId: checkedAdmission.threadId,
    idempotencyKey: checkedAdmission.idempotencyKey,
    agentId: checkedAdmission.agentId,
    agentDigest: checkedAdmission.agentDigest,
    inputPayload: checkedAdmission.inputPayload,
    inputDigest: checkedAdmission.inputDigest,
    now,
    ...(checkedAdmission.notBefore === undefined ? {} : { notBefore: checkedAdmission.notBefore }),
    ...link,
  })
})

/** The receipt of a row. @internal */
export const receiptOf = (row: SubmissionSnapshot, replayed: boolean): Receipt =>
  new Receipt({
    receiptId: row.receiptId,
    submissionId: row.submissionId,
    threadId: row.threadId,
    queueSequence: row.queueSequence,
    replayed,
    ...(row.host === undefined ? {} : { host: row.host }),
  })

/** Admits a prepared Submission as queued input. @internal */
export const admitQueued = Effect.fnUntraced(function* (env: RuntimeEnv, prepared: AdmissionCheck) {
  const admission = yield* admitRow(env, prepared)
  yield* env.hit("submit:after-admit")
  const row = admission.snapshot
  if (row.state === "admitted") yield* env.exclusive(materialize(env, row))
  // A delayed head waits for its time (the due bound wakes the Object): no hint for it.
  if ((admission._tag === "Admitted" && row.state !== "waiting") || row.state === "admitted")
    yield* env.wake.notify(row.threadId)
  return receiptOf(row, admission._tag === "Replayed")
})
