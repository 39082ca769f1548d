/**
 * The example's refund desk killed repeatedly while refunds are in flight (the whole runtime
 * disposed and started again over the same storage, as a crashing host would), then left to
 * its alarms. Every refund settles completed, and every Unknown Outcome a kill left behind is
 * settled by the refund step's reconcile (the provider asked by idempotency key) with no person:
 * none waits for an operator.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { postJson, startLocalWorker } from "./support/localWorker.ts"
import { tempDir } from "./support/tempDir.ts"

const threads = Array.from({ length: 10 }, (_, i) => `desk-kill-${i}`)
/** Rounds of submissions, each followed by a kill; more (up to the maximum) until one cuts a refund. */
const MIN_ROUNDS = 5
const MAX_ROUNDS = 15

const Row = Schema.Struct({ submissionId: Schema.String, state: Schema.String })
const Records = Schema.Struct({
  records: Schema.Array(
    Schema.Struct({
      entry: Schema.Struct({
        _tag: Schema.String,
        answer: Schema.optionalKey(Schema.Struct({ _tag: Schema.String })),
      }),
    }),
  ),
})

describe("refund desk under kills", () => {
  it.live(
    "settles every refund, reconciling each Unknown Outcome a kill left, with no operator",
    () =>
      Effect.gen(function* () {
        const worker = yield* startLocalWorker({
          entry: new URL("../../examples/refund-desk/src/worker.ts", import.meta.url),
          durableObjects: {
            THREADS: "Threads",
            RELAY: "RelayInbox",
            PAYMENTS: "Payments",
            DIRECTORY: "ThreadDirectory",
          },
          persistDir: yield* tempDir("refund-kills"),
          bindings: { OPERATOR_TOKEN: "kill-test-token" },
        })
        const historiesOf = Effect.forEach(threads, (thread) =>
          worker.json(Records, `/threads/${thread}/history?limit=500`),
        )
        const unknownSoFar = Effect.map(
          historiesOf,
          (pages) =>
            pages.flatMap((page) => page.records).filter((r) => r.entry._tag === "UnknownOutcomeRecorded")
              .length,
        )
        // Submissions arrive while the runtime is killed and restarted under them, round after
        // round until a kill has cut a refund mid-call (where a kill lands depends on timing).
        let kills = 0
        let rounds = 0
        while (rounds < MIN_ROUNDS || (rounds < MAX_ROUNDS && (yield* unknownSoFar) === 0)) {
          const round = rounds
          yield* Effect.forEach(
            threads,
            (thread) =>
              worker.fetch(
                `/threads/${thread}/submissions`,
                postJson({
                  idempotencyKey: `order-${thread}-${round}`,
                  input: { orderId: `${thread}-${round}`, amount: 10 + round },
                }),
              ),
            { concurrency: "unbounded", discard: true },
          )
          yield* Effect.sleep(40 + 37 * (round % MIN_ROUNDS))
          yield* worker.restart
          kills++
          rounds++
        }
        const total = threads.length * rounds
        // Only alarms from here on (the reads below do not write).
        const rowsOf = (thread: string) =>
          worker.json(Schema.Array(Row), `/threads/${thread}/submissions?limit=50`)
        const deadline = Date.now() + 150_000
        let settled = 0
        while (Date.now() < deadline) {
          const rows = yield* Effect.forEach(threads, rowsOf)
          settled = rows.flat().filter((row) => row.state === "settled").length
          if (settled === total) break
          yield* Effect.sleep(500)
        }
        const histories = yield* historiesOf
        const entries = histories.flatMap((page) => page.records.map((record) => record.entry))
        const unknown = entries.filter((entry) => entry._tag === "UnknownOutcomeRecorded").length
        const answers = entries
          .filter((entry) => entry._tag === "ReconcileAnswered")
          .map((entry) => entry.answer?._tag)
        const submissions = (yield* Effect.forEach(threads, rowsOf)).flat()
        console.log(
          JSON.stringify({
            kills,
            rounds,
            submissions: submissions.length,
            settled,
            unknownOutcomes: unknown,
            reconcileAnswers: answers,
          }),
        )
        expect(submissions).toHaveLength(total)
        expect(submissions.every((row) => row.state === "settled")).toBe(true)
        expect(entries.filter((entry) => entry._tag === "SubmissionSettled")).toHaveLength(total)
        // The kills cut refunds in flight (the provider takes 20 ms), and every Unknown Outcome
        // was settled by its reconcile, none by (or for) a person.
        expect(unknown).toBeGreaterThan(0)
        expect(entries.filter((entry) => entry._tag === "UnknownOutcomeResolved")).toEqual([])
        expect(answers.filter((answer) => answer === "Happened" || answer === "NotHappened").length).toBe(
          unknown,
        )
        for (const thread of threads) {
          for (const row of yield* rowsOf(thread)) {
            const status = yield* worker.json(
              Schema.Struct({ settlement: Schema.Struct({ outcome: Schema.String }) }),
              `/threads/${thread}/submissions/${row.submissionId}`,
            )
            expect(status.settlement.outcome).toBe("completed")
          }
        }
      }),
    240_000,
  )
})
