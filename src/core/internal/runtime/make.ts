/** Assembles the durable agent runtime from its parts. @internal */
import { Effect } from "effect"
import { AgentRegistry } from "../../AgentRegistration.ts"
import type { DurableAgentRuntime } from "../../DurableAgentRuntime.ts"
import { DurableRuntimeConfig } from "../../DurableRuntimeConfig.ts"
import { RuntimeFailpoint } from "../../RuntimeFailpoint.ts"
import { SubmissionLedger } from "../../SubmissionLedger.ts"
import { SubmissionLedgerLimits } from "../ledger/model.ts"
import { ThreadHistory } from "../../ThreadHistory.ts"
import { WakeScheduler } from "../../WakeScheduler.ts"
import { ProgressHub } from "../../ProgressHub.ts"
import { MessageOutbox, SelfAddress } from "../../MessageOutbox.ts"
import { makeAttemptDueHead, makeAttemptThreadHead, makeProcessThreadHead } from "./attempt/attemptRun.ts"
import { makeInspect, makePreviewRecovery } from "./recovery/inspect.ts"
import { makeRunRecovery } from "./recovery/recoveryExecute.ts"
import { AdmissionCapacity } from "./admission/admissionCapacity.ts"
import { makeRuntimeEnv } from "./shared/runtimeEnv.ts"
import { makeReceive, makeRecordDelivery } from "./children/children.ts"
import { makeResolutions } from "./settlement/resolve.ts"
import { makePreviewEvent, makeReceiveEvent } from "./events/receiveEvent.ts"
import { makeAdmit, makePrepare, makeSubmit, makeSubmitRegistered } from "./admission/submit.ts"
import { makeAdmitDueOccurrences } from "./schedules/occurrences.ts"
import { makePrepareSchedule, makeSchedule, makeUnschedule } from "./schedules/schedule.ts"

/** @internal */
export const makeRuntime = Effect.gen(function* () {
  const ledger = yield* SubmissionLedger
  const env = makeRuntimeEnv({
    ledger,
    incarnation: yield* ledger.beginIncarnation,
    history: yield* ThreadHistory,
    outbox: yield* MessageOutbox,
    self: yield* SelfAddress,
    hit: (yield* RuntimeFailpoint).hit,
    registry: yield* AgentRegistry,
    wake: yield* WakeScheduler,
    progress: yield* ProgressHub,
    settings: yield* DurableRuntimeConfig,
    limits: yield* SubmissionLedgerLimits,
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
    attemptDueHead: makeAttemptDueHead(env),
    receive: makeReceive(env),
    previewEvent: makePreviewEvent(env),
    receiveEvent: makeReceiveEvent(env),
    recordDelivery: makeRecordDelivery(env),
    processThreadHead: makeProcessThreadHead(attemptThreadHead),
    inspect: makeInspect(env),
    previewRecovery: makePreviewRecovery(env),
    prepareSchedule: makePrepareSchedule(env),
    schedule: makeSchedule(env),
    unschedule: makeUnschedule(env),
    schedules: env.ledger.listSchedules,
    admitDueOccurrences: makeAdmitDueOccurrences(env),
  }
  return service
})
