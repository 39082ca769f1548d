/**
 * What an event's name and id may be, on a `ThreadObject` in workerd: 1 to 128 (name) or 256
 * (id) characters, no control character (C0, DEL, C1) and no lone surrogate, the rule
 * identifiers follow. A send that breaks it is refused with `InvalidRequest` naming the rule,
 * and writes nothing; a name of any other character, astral ones included, is sent and taken.
 * A wait and an event an older release recorded under such a name are replayed as they are.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import * as AgentEvent from "../../src/core/AgentEvent.ts"
import { runInDurableObject } from "cloudflare:test"
import { replayWaitAgent, replayWaitName } from "../worker/edgeAgents.ts"
import { courierAgent } from "../worker/threadObject.ts"
import {
  clientOf,
  deliverUntil,
  failureOf,
  inState,
  storedEverything,
  stubOf,
  threadName,
} from "./support.ts"

/** A courier Submission parked (suspended) on its wait for `shipped`. */
const waitingCourier = (label: string) =>
  Effect.gen(function* () {
    const thread = threadName(label)
    const client = clientOf(thread)
    const receipt = yield* client.agent(courierAgent).submit({ wait: "first" }, { idempotencyKey: "k" })
    yield* deliverUntil(thread, inState(client, receipt.submissionId, "suspended"))
    return { thread, client, receipt }
  })

const badTexts: ReadonlyArray<readonly [string, string, string]> = [
  ["empty", "", "of 1 to"],
  ["a NUL", "ship\u0000ped", "without control characters"],
  ["an escape", "ship\u001bped", "without control characters"],
  ["a DEL", "shipped\u007f", "without control characters"],
  ["a C1 next line", "ship\u0085ped", "without control characters"],
  ["a lone high surrogate", "shipped\uD83D", "without a lone surrogate"],
  ["a lone low surrogate", "\uDCE6shipped", "without a lone surrogate"],
]

/** The event records of a Thread, as `<tag>:<event name>`. */
const eventTags = (thread: string) =>
  Effect.map(clientOf(thread).history(), (page) =>
    page.records.flatMap((record) =>
      record.entry._tag === "EventReceived" || record.entry._tag === "EventConsumed"
        ? [`${record.entry._tag}:${record.entry.event}`]
        : [],
    ),
  )

/** What declaring (or waiting for) a name that breaks a rule throws (or dies with). */
const declared: Record<string, string> = {
  "of 1 to": "an event name has 1 to 128 characters, got 0",
  "without control characters": "an event name has no control characters",
  "without a lone surrogate": "an event name has no lone surrogate",
}

describe("event names and ids", () => {
  it.live(
    "refuses a send whose name or id breaks the rule as InvalidRequest naming it, writing nothing",
    () =>
      Effect.gen(function* () {
        const { thread, client, receipt } = yield* waitingCourier("bad-names")
        const before = yield* storedEverything(stubOf(thread))
        const cases = [
          ...badTexts.map(([label, text, rule]) => [`a name with ${label}`, text, "e", rule] as const),
          ["a name of 129 characters", "n".repeat(129), "e", "of 1 to 128 characters"] as const,
          ...badTexts.map(([label, text, rule]) => [`an id with ${label}`, "shipped", text, rule] as const),
          ["an id of 257 characters", "shipped", "i".repeat(257), "of 1 to 256 characters"] as const,
        ]
        for (const [label, event, eventId, rule] of cases) {
          const refused = failureOf(
            yield* Effect.exit(client.sendEvent(receipt.submissionId, event, { tracking: "T" }, { eventId })),
          )
          expect(refused, label).toMatchObject({ _tag: "InvalidRequest", entryPoint: "sendEvent" })
          expect((refused as { message: string }).message, label).toContain(rule)
        }
        expect(yield* storedEverything(stubOf(thread))).toEqual(before)
        // An id of other characters, astral ones included, is sent and the wait takes it.
        expect(
          yield* client.sendEvent(
            receipt.submissionId,
            "shipped",
            { tracking: "T-1" },
            { eventId: "📦 ünï" },
          ),
        ).toMatchObject({ eventId: "📦 ünï", replayed: false, resumed: true })
        yield* deliverUntil(thread, inState(client, receipt.submissionId, "settled"))
        expect(yield* client.awaitSettlement(receipt.submissionId, 1_000)).toMatchObject({
          outcome: "completed",
          output: "T-1",
        })
      }),
  )

  it("refuses to declare an event whose name breaks the rule, naming it", () => {
    for (const [, text, rule] of badTexts)
      expect(() => AgentEvent.make(text, Schema.Null)).toThrow(declared[rule])
    expect(AgentEvent.make("📦 shipped", Schema.Null).name).toBe("📦 shipped")
  })

  it.live("replays a wait and an event recorded under a name the rule now refuses", () =>
    Effect.gen(function* () {
      const thread = threadName("replay")
      const client = clientOf(thread)
      replayWaitName.current = "shippedX"
      const receipt = yield* client.agent(replayWaitAgent).submit({}, { idempotencyKey: "k" })
      yield* deliverUntil(thread, inState(client, receipt.submissionId, "suspended"))
      yield* client.sendEvent(receipt.submissionId, "shippedX", "T-9", { eventId: "e1" })
      const approvalRequested = Effect.map(client.history(), (page) =>
        page.records.some((record) => record.entry._tag === "ApprovalRequested"),
      )
      yield* deliverUntil(thread, approvalRequested)
      // As an older release stored them: the event and its consumed wait named with a control character.
      yield* Effect.promise(() =>
        runInDurableObject(stubOf(thread), async (_instance, state) => {
          state.storage.sql.exec(
            "UPDATE effect_agent_history SET entries = replace(entries, '\"shippedX\"', '\"shipped\\u0001\"')",
          )
          state.storage.sql.exec(
            "UPDATE effect_agent_event_ids SET event = 'shipped' || char(1) WHERE event = 'shippedX'",
          )
        }),
      )
      replayWaitName.current = "shipped\u0001"
      expect(yield* eventTags(thread)).toEqual(["EventReceived:shipped\u0001", "EventConsumed:shipped\u0001"])
      yield* client.resolveApproval(receipt.submissionId, { approved: true })
      yield* deliverUntil(thread, inState(client, receipt.submissionId, "settled"))
      expect(yield* client.awaitSettlement(receipt.submissionId, 1_000)).toMatchObject({
        outcome: "completed",
        output: "T-9",
      })
    }),
  )
})
