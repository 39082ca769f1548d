/**
 * The note of a careful event's head in flight (src/internal/maintenance/suspect.ts) is kept only
 * when `maxObjectKillsPerHead` is set: without a cap nothing acts on the count, and the note would
 * cost every incarnation's first event a row written and a commit more.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { SUSPECT_HEAD_KEY } from "../../../src/internal/maintenance/suspect.ts"
import { makeRuns, threeSteps } from "../../core/runtimeAgents.ts"
import { freezeAt } from "../../support/switchboard.ts"
import { incarnation } from "../../support/incarnation.ts"
import { dayAhead, inObject, objectName } from "../harness.ts"
import { abandon, deliver, submit } from "./fixtures.ts"

/** The stored note after an incarnation's first event froze in its head's Attempt. */
const noteAfterKill = (label: string, config: { readonly maxObjectKillsPerHead?: number | "never" }) =>
  inObject(objectName(label), (ctx) =>
    Effect.gen(function* () {
      yield* dayAhead
      const runs = yield* makeRuns
      const kill = yield* freezeAt("claim:after-claim")
      const inc = yield* incarnation(ctx, { agents: [threeSteps(runs)], runtime: kill.handler, config })
      const head = yield* submit(inc, "lane-a", "three-steps", "a", { n: 1 })
      yield* abandon(deliver(ctx, inc.maintenance))
      yield* kill.reached
      return { note: ctx.storage.kv.get(SUSPECT_HEAD_KEY), head: head.submissionId }
    }),
  )

describe("the suspect head note", () => {
  it.effect("names the head in flight when a cap is set", () =>
    Effect.gen(function* () {
      const { note, head } = yield* noteAfterKill("suspect-capped", { maxObjectKillsPerHead: 3 })
      expect(note).toMatchObject({ inFlight: head })
    }),
  )

  it.effect("is not written by default", () =>
    Effect.gen(function* () {
      const { note } = yield* noteAfterKill("suspect-default", {})
      expect(note).toBeUndefined()
    }),
  )
})
