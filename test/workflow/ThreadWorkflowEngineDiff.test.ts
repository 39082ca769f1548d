/**
 * Differential: each program runs on Effect's in-memory engine (`WorkflowEngine.layerMemory`,
 * the reference semantics) and on the Threads engine, and what a caller observes (exits, poll
 * answers, what activities and compensations did, in order) must be the same, unless the row
 * names a deliberate difference that docs/workflows.md documents.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { WorkflowEngine } from "effect/workflow"
import { diffHandlers } from "../worker/workflowDiffHandlers.ts"
import { outcomePrograms } from "./diffOutcomes.ts"
import { memory, threads } from "./diffSupport.ts"
import { waitPrograms } from "./diffWaits.ts"
import { clientEngine, uniqueId } from "./support.ts"

const memoryEngine = Layer.provideMerge(diffHandlers, WorkflowEngine.layerMemory)

describe("ThreadWorkflowEngine against the in-memory engine", () => {
  for (const program of [...outcomePrograms, ...waitPrograms]) {
    it.live(program.name, () =>
      Effect.gen(function* () {
        const reference = yield* program
          .run(memory, uniqueId("memory"))
          .pipe(Effect.provide(memoryEngine), Effect.orDie)
        const ours = yield* program
          .run(threads, uniqueId("thread"))
          .pipe(Effect.provide(clientEngine), Effect.orDie)
        if (program.differs === undefined) {
          expect(ours).toEqual(reference)
        } else {
          // The rest is the same; the named keys differ as documented.
          expect(ours).toEqual({ ...reference, ...program.differs.threads })
          expect(reference).toMatchObject(program.differs.memory)
        }
      }),
    )
  }
})
