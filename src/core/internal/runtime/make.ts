/** Assembles the durable agent runtime from its parts. @internal */
import { Effect } from "effect"
import { AgentRegistry } from "../../AgentRegistration.ts"
import type { DurableAgentRuntime } from "../../DurableAgentRuntime.ts"
import { DurableRuntimeConfig } from "../../DurableRuntimeConfig.ts"
import { RuntimeFailpoint } from "../../RuntimeFailpoint.ts"
import { SubmissionLedger } from "../../SubmissionLedger.ts"
import { ThreadHistory } from "../../ThreadHistory.ts"
import { WakeScheduler } from "../../WakeScheduler.ts"
import { ProgressHub } from "../../ProgressHub.ts"
import { MessageOutbox, SelfAddress } from "../../MessageOutbox.ts"
import { makeAttemptThreadHead, makeProcessThreadHead } from "./attemptRun.ts"
import { makeInspect, makePreviewRecovery } from "./inspect.ts"
import { makeRunRecovery } from "./recoveryExecute.ts"
import { AdmissionCapacity } from "./capacity.ts"
import { makeRuntimeEnv } from "./env.ts"
import { makeReceive, makeRecordDelivery } from "./children.ts"
import { makeResolutions } from "./resolve.ts"
import { makeAdmit, makePrepare, makeSubmit, makeSubmitRegistered } from "./submit.ts"

/** @internal */
export const makeRuntime = Effect.gen(function* () {
  const env = makeRuntimeEnv({
    ledger: yield* SubmissionLedger,
    history: yield* ThreadHistory,
    outbox: yield* MessageOutbox,
    self: yield* SelfAddress,
    hit: (yield* RuntimeFailpoint).hit,
    registry: yield* AgentRegistry,
    wake: yield* WakeScheduler,
    progress: yield* ProgressHub,
    settings: yield* DurableRuntimeConfig,
    capacity: yield* AdmissionCapacity,
  })
  const attemptThreadHead = makeAttemptThreadHead(env)
  const service: DurableAgentRuntime["Service"] = {
    prepare: makePrepare(env),
    admit: makeAdmit(env),
    submit: makeSubmit(env),
    submitRegistered: makeSubmitRegistered(env),
    ...makeResolutions(env),
    runRecovery: makeRunRecovery(env),
    attemptThreadHead,
    receive: makeReceive(env),
    recordDelivery: makeRecordDelivery(env),
    processThreadHead: makeProcessThreadHead(attemptThreadHead),
    inspect: makeInspect(env),
    previewRecovery: makePreviewRecovery(env),
  }
  return service
})
