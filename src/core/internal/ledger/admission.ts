/**
 * Admission checks shared by both ledgers, in the order they apply: a used idempotency key
 * replays (or conflicts) before any limit, so a replay is exempt from the queue-depth limit.
 *
 * A Submission's id is derived from its Thread and idempotency key (with a secret salt of the
 * Object, so ids are unique across Objects and not guessable): the key is the Submission's
 * identity, and one primary-key seek answers both "is this key used" and "which row is this
 * id", with no second index to write on every admission.
 */
import { Result } from "effect"
import { type IdempotencyKey, ReceiptId, SubmissionId, type ThreadId } from "../../Identifiers.ts"
import { sha256Hex } from "../sha256.ts"
import { AdmissionRefused, IdempotencyConflict, LedgerError, SubmissionSnapshot } from "./model.ts"
import type { Admission, AdmissionCheck, AdmissionRequest, LedgerLimits } from "./model.ts"
import { utf8ByteLength } from "./rules.ts"

/** The Submission id of `key` in `threadId` (identifiers hold no control characters). @internal */
export const submissionIdFor = (salt: string, threadId: ThreadId, key: IdempotencyKey): SubmissionId =>
  SubmissionId.make(`sub-${sha256Hex(`${salt}\u0000${threadId}\u0000${key}`).slice(0, 40)}`)

/** A fresh receipt id. @internal */
export const newReceiptId = (): ReceiptId => ReceiptId.make(crypto.randomUUID())

/** The due time of a request admitted with a `notBefore` later than its `now`. @internal */
export const delayedUntil = (request: Pick<AdmissionRequest, "notBefore" | "now">): number | undefined =>
  request.notBefore !== undefined && request.notBefore > request.now ? request.notBefore : undefined

/**
 * The row a new Submission is admitted as: `ready` (its acceptance is recorded with it), or
 * `joining` its `host`. A delayed one (`notBefore` later than `now`) is due at `notBefore`: the
 * head of an empty lane waits for it (`waiting`, parked), a row behind others keeps its place
 * (`ready`) and its head waits when it gets there. Throws if the request does not validate.
 * @internal
 */
export const admittedRow = (
  request: AdmissionRequest,
  at: {
    readonly submissionId: SubmissionId
    readonly queueSequence: number
    readonly host?: SubmissionId
    /** No nonterminal row precedes it in its lane. */
    readonly laneEmpty: boolean
  },
): SubmissionSnapshot => {
  const notBefore = delayedUntil(request)
  return new SubmissionSnapshot({
    submissionId: at.submissionId,
    threadId: request.threadId,
    queueSequence: at.queueSequence,
    idempotencyKey: request.idempotencyKey,
    agentId: request.agentId,
    agentDigest: request.agentDigest,
    inputPayload: request.inputPayload,
    inputDigest: request.inputDigest,
    receiptId: newReceiptId(),
    state: at.host !== undefined ? "joining" : notBefore !== undefined && at.laneEmpty ? "waiting" : "ready",
    producerEpoch: 0,
    abortRequested: false,
    createdAt: request.now,
    readyAt: notBefore ?? request.now,
    ...(request.parent === undefined ? {} : { parent: request.parent }),
    ...(at.host === undefined ? {} : { host: at.host }),
    ...(notBefore === undefined ? {} : { dueAt: notBefore, wait: { _tag: "Delayed" as const, notBefore } }),
  })
}

/** A join cannot wait for a time: it is read by its host at once or runs as queued input. @internal */
export const delayedJoin = (operation: string, request: AdmissionRequest): LedgerError | undefined =>
  request.host !== undefined && delayedUntil(request) !== undefined
    ? new LedgerError({ operation, message: "a join cannot be admitted with a later notBefore" })
    : Number.isFinite(request.notBefore ?? 0)
      ? undefined
      : new LedgerError({ operation, message: `notBefore must be a finite number, got ${request.notBefore}` })

/** A fresh salt for a new store. @internal */
export const newSalt = (): string => crypto.randomUUID().replaceAll("-", "")

/**
 * The row stored under a derived id belongs to another Thread or key only if 160 bits of
 * SHA-256 collided: refused by name rather than replayed.
 * @internal
 */
export const idCollision = (
  operation: string,
  request: AdmissionCheck,
  existing: SubmissionSnapshot,
): LedgerError | undefined =>
  existing.threadId === request.threadId && existing.idempotencyKey === request.idempotencyKey
    ? undefined
    : new LedgerError({
        operation,
        message: `submission id ${existing.submissionId} of key ${request.idempotencyKey} collides with another key`,
      })

/** The answer for a used key: the original row, or a conflict. @internal */
export const replayOf = (
  request: AdmissionCheck,
  existing: SubmissionSnapshot,
): Result.Result<Admission, IdempotencyConflict> =>
  existing.agentId === request.agentId && existing.inputDigest === request.inputDigest
    ? Result.succeed({ _tag: "Replayed", snapshot: existing })
    : Result.fail(
        new IdempotencyConflict({
          threadId: request.threadId,
          idempotencyKey: request.idempotencyKey,
          submissionId: existing.submissionId,
          message:
            existing.agentId === request.agentId
              ? `idempotency key ${request.idempotencyKey} was used for a different input`
              : `idempotency key ${request.idempotencyKey} was used for agent ${existing.agentId}`,
        }),
      )

/** Refuses an input larger than the limit. @internal */
export const inputBytesRefusal = (
  request: Pick<AdmissionCheck, "threadId" | "inputPayload">,
  limits: LedgerLimits,
): AdmissionRefused | undefined => {
  const bytes = utf8ByteLength(request.inputPayload)
  return bytes > limits.maxInputBytes
    ? new AdmissionRefused({
        threadId: request.threadId,
        reason: "input-bytes",
        message: `the input is ${bytes} bytes; the limit is ${limits.maxInputBytes}`,
      })
    : undefined
}

/** Refuses a new Submission in a full lane. @internal */
export const queueDepthRefusal = (
  request: AdmissionCheck,
  limits: LedgerLimits,
  depth: number,
): AdmissionRefused | undefined =>
  depth >= limits.maxQueueDepthPerLane
    ? new AdmissionRefused({
        threadId: request.threadId,
        reason: "queue-depth",
        message: `thread ${request.threadId} already has ${depth} unsettled submissions; the limit is ${limits.maxQueueDepthPerLane}`,
      })
    : undefined
