/**
 * `awaitProgress` answers a Submission's records since a token: when they are together over the
 * 32 MiB a call can carry (here 270 step results of 128 KiB), the answer stops early with `more`
 * and a token that continues at once from its last record, instead of failing the call with
 * `InvalidRequest` whatever the caller retries. The console's Submission view, which reads its
 * records with no token, answers the first part and reads on the same way.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { env, runDurableObjectAlarm } from "cloudflare:test"
import * as ThreadClient from "../../src/ThreadClient.ts"
import * as ThreadConsole from "../../src/ThreadConsole.ts"
import { bulkyAgent } from "../worker/threadObject.ts"
import { threadName } from "./support.ts"

describe("ThreadObject awaitProgress over what a call can carry", () => {
  it.live(
    "answers the records of a large Submission short, with more, and every record across the answers",
    () =>
      Effect.gen(function* () {
        const thread = threadName("progress-large")
        // The default limits (step results of up to `maxStoredValueBytes`, 128 KiB), no retention.
        const client = ThreadClient.make(env.THREADS_WAKE, thread)
        const steps = 270
        const receipt = yield* client
          .agent(bulkyAgent)
          .submit({ steps, size: 130_000 }, { idempotencyKey: "k" })
        for (let round = 0; round < 20; round++) {
          if ((yield* client.status(receipt.submissionId)).state === "settled") break
          yield* Effect.promise(() =>
            runDurableObjectAlarm(env.THREADS_WAKE.getByName(thread)).catch(() => false),
          )
        }
        const sequences: Array<number> = []
        let after: string | undefined
        let answers = 0
        let settledBeforeLast = false
        while (answers < 100) {
          // A token of an answer cut short is answered at once, not after the wait.
          const started = Date.now()
          const answer = yield* client.awaitProgress(receipt.submissionId, {
            ...(after === undefined ? {} : { after }),
            timeoutMillis: 30_000,
          })
          answers++
          expect(Date.now() - started).toBeLessThan(10_000)
          expect(answer).toMatchObject({ changed: true, state: "settled" })
          expect(answer.records.length).toBeGreaterThan(0)
          sequences.push(...answer.records.map((record) => record.sequence))
          after = answer.token
          if (answer.more !== true) break
          settledBeforeLast = true
        }
        // Several answers, each record once and in order: acceptance, the steps, the settlement.
        expect(answers).toBeGreaterThan(1)
        expect(settledBeforeLast).toBe(true)
        expect(sequences).toEqual(Array.from({ length: sequences.length }, (_, i) => i + 1))
        expect(sequences.length).toBeGreaterThanOrEqual(steps + 2)
        // Caught up: the last token waits for the next change, like any other.
        const idle = yield* client.awaitProgress(receipt.submissionId, {
          after: after ?? "",
          timeoutMillis: 0,
        })
        expect(idle).toMatchObject({ changed: false, records: [] })
        expect(idle.more).toBeUndefined()

        // The console's view of it answers the first part, and its progress route the rest.
        const mounted = ThreadConsole.handler({ namespace: env.THREADS_WAKE, basePath: "/console/" })
        const get = (path: string) =>
          Effect.promise(async () => {
            const response = await mounted(new Request(`https://desk.example/console/api/${path}`))
            return { status: response.status, body: (await response.json()) as any }
          })
        const api = `objects/${thread}/threads/${thread}/submissions/${receipt.submissionId}`
        const detail = yield* get(api)
        expect(detail.status).toBe(200)
        expect(detail.body).toMatchObject({ waiting: "settled", progress: { state: "settled", more: true } })
        let progress = detail.body.progress
        const viewed: Array<number> = progress.records.map((record: { sequence: number }) => record.sequence)
        while (progress.more === true) {
          const next = yield* get(
            `${api}/progress?after=${encodeURIComponent(progress.token)}&timeoutMillis=0`,
          )
          expect(next.status).toBe(200)
          progress = next.body
          viewed.push(...progress.records.map((record: { sequence: number }) => record.sequence))
        }
        expect(viewed).toEqual(sequences)
      }),
    120_000,
  )
})
