/**
 * The refund desk's archive: before retention removes a settled refund, its row, records and
 * messages go to the `ARCHIVE` R2 bucket as one JSON object each. Keys name the Submission and
 * its receipt, so handing the same batch over again (after a crash) rewrites the same objects,
 * and a key reused after removal (a new Submission under the same id) never overwrites the old.
 */
import { Effect, Layer, Schema } from "effect"
import { DurableObjectContext } from "@effect-agent/platform-cloudflare/CloudflareBindings"
import {
  ArchivedSubmission,
  ThreadArchive,
  ThreadArchiveError,
} from "@effect-agent/platform-cloudflare/Retention"

const encode = Schema.encodeSync(Schema.fromJsonString(ArchivedSubmission))

/** Where one archived Submission is stored in the bucket. */
export const archiveKey = (archived: ArchivedSubmission): string =>
  `submissions/${archived.submission.threadId}/${archived.submission.submissionId}/${archived.submission.receiptId}.json`

/** The archive over an R2 bucket: one object per Submission, all written before it succeeds. */
export const r2Archive = (bucket: R2Bucket) =>
  ThreadArchive.of({
    archive: (batch) =>
      Effect.tryPromise({
        try: () =>
          Promise.all(
            batch.map((archived) =>
              bucket.put(archiveKey(archived), encode(archived), {
                httpMetadata: { contentType: "application/json" },
              }),
            ),
          ),
        catch: (cause) => new ThreadArchiveError({ message: "the archive bucket refused a write", cause }),
      }),
  })

/** The archive of this Worker's Threads: its `ARCHIVE` bucket. */
export const RefundArchive = Layer.effect(
  ThreadArchive,
  Effect.gen(function* () {
    const { env } = yield* DurableObjectContext
    return r2Archive(env.ARCHIVE)
  }),
)
