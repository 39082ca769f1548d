/**
 * The refund desk's R2 archive in Miniflare's local bucket: each archived Submission is one JSON
 * object keyed by its Thread, id and receipt; handing the same batch over again rewrites the
 * same objects, and what is stored decodes to what was archived.
 */
import { describe, expect, it } from "@effect/vitest"
import { env } from "cloudflare:test"
import { Effect, Schema } from "effect"
import { ArchivedSubmission } from "@effect-agent/platform-cloudflare/Retention"
import { Settlement, SubmissionSnapshot } from "@effect-agent/platform-cloudflare/SubmissionLedger"
import { HistoryRecord } from "@effect-agent/platform-cloudflare/ThreadHistory"
import { archiveKey, r2Archive } from "../../examples/refund-desk/src/archive.ts"

const archived = (threadId: string, id: string) => {
  const settlement = new Settlement({
    submissionId: id as never,
    threadId: threadId as never,
    outcome: "completed",
    output: { refunded: 40 },
    settledAt: 2_000,
  })
  return new ArchivedSubmission({
    submission: new SubmissionSnapshot({
      submissionId: id as never,
      threadId: threadId as never,
      queueSequence: 1,
      idempotencyKey: "k" as never,
      agentId: "refund" as never,
      agentDigest: "d",
      inputPayload: '{"orderId":"A1","amount":40}',
      inputDigest: "i",
      receiptId: `receipt-${id}` as never,
      state: "settled",
      producerEpoch: 1,
      abortRequested: false,
      settlement,
      createdAt: 1_000,
    }),
    records: [
      new HistoryRecord({
        threadId: threadId as never,
        sequence: 1,
        submissionId: id as never,
        recordedAt: 2_000,
        entry: { _tag: "SubmissionSettled", outcome: "completed", output: { refunded: 40 } } as never,
      }),
    ],
    messages: [],
  })
}

describe("the refund desk's archive", () => {
  it.effect("stores each Submission once per receipt in the R2 bucket, and a repeat rewrites it", () =>
    Effect.gen(function* () {
      const thread = `desk-archive-${crypto.randomUUID()}`
      const batch = [archived(thread, "sub-a"), archived(thread, "sub-b")]
      const archive = r2Archive(env.ARCHIVE)
      yield* archive.archive(batch)
      yield* archive.archive(batch)
      const listed = yield* Effect.promise(() => env.ARCHIVE.list({ prefix: `submissions/${thread}/` }))
      expect(listed.objects.map((object) => object.key).sort()).toEqual(batch.map(archiveKey).sort())
      const stored = yield* Effect.promise(() =>
        env.ARCHIVE.get(archiveKey(batch[0]!)).then((o) => o!.text()),
      )
      expect(Schema.decodeUnknownSync(Schema.fromJsonString(ArchivedSubmission))(stored)).toEqual(batch[0])
    }),
  )
})
