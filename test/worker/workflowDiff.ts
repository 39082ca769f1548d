/**
 * The workflows of the differential suite: each runs on Effect's in-memory engine and on the
 * Threads engine, and what a caller observes is compared. Activities and compensations note
 * what they did, by execution id, in a log kept in the test isolate (their handlers are in
 * workflowDiffHandlers.ts).
 */
import { Schema } from "effect"
import { DurableDeferred, Workflow } from "effect/workflow"

/** What each execution's activities and compensations did, in order, by execution id. */
export const diffLog = new Map<string, Array<string>>()

/** The typed refusal the programs fail with. */
export class DiffRefused extends Schema.TaggedError<DiffRefused>()("DiffRefused", {
  reason: Schema.String,
}) {}

const byId = { idempotencyKey: ({ id }: { readonly id: string }) => id }

/** An activity failing `failures` times with a typed error, under `Activity.retry({ times: 3 })`. */
export const DiffRetry = Workflow.make("DiffRetry", {
  payload: { id: Schema.String, failures: Schema.Number },
  success: Schema.Number,
  error: Schema.String,
  ...byId,
})

/** An activity, then the workflow's typed failure. */
export const DiffTyped = Workflow.make("DiffTyped", {
  payload: { id: Schema.String },
  success: Schema.String,
  error: DiffRefused,
  ...byId,
})

/** A defect of the workflow's own code, or of an activity. */
export const DiffDefect = Workflow.make("DiffDefect", {
  payload: { id: Schema.String, inActivity: Schema.Boolean },
  success: Schema.String,
  ...byId,
})

/** Three compensated activities, then a typed failure. */
export const DiffCompensate = Workflow.make("DiffCompensate", {
  payload: { id: Schema.String },
  success: Schema.String,
  error: DiffRefused,
  ...byId,
})

/** An activity, an hour's durable clock, an activity. */
export const DiffNap = Workflow.make("DiffNap", {
  payload: { id: Schema.String },
  success: Schema.String,
  ...byId,
})

/** The deferred `DiffHold` awaits. */
export const DiffSignal = DurableDeferred.make("signal", { success: Schema.String, error: Schema.String })

/** A compensated activity, the signal, an activity. */
export const DiffHold = Workflow.make("DiffHold", {
  payload: { id: Schema.String },
  success: Schema.String,
  error: Schema.String,
  ...byId,
})

/** An activity failing on its first run, under `SuspendOnFailure`. */
export const DiffResumable = Workflow.make("DiffResumable", {
  payload: { id: Schema.String },
  success: Schema.String,
  error: Schema.String,
  ...byId,
}).annotate(Workflow.SuspendOnFailure, true)

/** The two deferreds `DiffPair` awaits, in this order. */
export const DiffFirst = DurableDeferred.make("first", { success: Schema.String })
export const DiffSecond = DurableDeferred.make("second", { success: Schema.String })

/** Awaits `DiffFirst`, an activity, `DiffSecond`, an activity. */
export const DiffPair = Workflow.make("DiffPair", {
  payload: { id: Schema.String },
  success: Schema.String,
  ...byId,
})

/** One activity. */
export const DiffOnce = Workflow.make("DiffOnce", {
  payload: { id: Schema.String },
  success: Schema.String,
  ...byId,
})

/** An activity, a short (in-memory) clock, an activity. */
export const DiffShortNap = Workflow.make("DiffShortNap", {
  payload: { id: Schema.String },
  success: Schema.String,
  ...byId,
})

/** A child: an activity, then a typed failure or a defect. */
export const DiffChild = Workflow.make("DiffChild", {
  payload: { id: Schema.String, defect: Schema.Boolean },
  success: Schema.String,
  error: DiffRefused,
  ...byId,
})

/** Executes `DiffChild`; `recover` catches its typed failure and runs a fallback activity. */
export const DiffParent = Workflow.make("DiffParent", {
  payload: { id: Schema.String, recover: Schema.Boolean, defect: Schema.Boolean },
  success: Schema.String,
  error: DiffRefused,
  ...byId,
})

/** The child execution's payload of a parent's. */
export const childPayload = (id: string, defect: boolean) => ({ id: `child-of-${id}`, defect })

/** A workflow finalizer, then the signal. */
export const DiffFinal = Workflow.make("DiffFinal", {
  payload: { id: Schema.String },
  success: Schema.String,
  error: Schema.String,
  ...byId,
})

/** Its own code fails on its first pass, under `SuspendOnFailure`. */
export const DiffSelfFail = Workflow.make("DiffSelfFail", {
  payload: { id: Schema.String },
  success: Schema.String,
  error: Schema.String,
  ...byId,
}).annotate(Workflow.SuspendOnFailure, true)

/** Executes `DiffHold` as a child and waits for it. */
export const DiffGuard = Workflow.make("DiffGuard", {
  payload: { id: Schema.String },
  success: Schema.String,
  error: Schema.String,
  ...byId,
})

/** The child execution's payload of a guard's. */
export const heldPayload = (id: string) => ({ id: `held-by-${id}` })

/** A durable clock on the Object's alarm (threshold 0) between two activities. */
export const DiffAlarm = Workflow.make("DiffAlarm", {
  payload: { id: Schema.String },
  success: Schema.String,
  ...byId,
})

/** Starts `DiffHold` as a child with `discard: true` and completes without awaiting it. */
export const DiffFire = Workflow.make("DiffFire", {
  payload: { id: Schema.String },
  success: Schema.String,
  ...byId,
})

/** Executes `DiffResumable` as a child and waits for it. */
export const DiffAdopt = Workflow.make("DiffAdopt", {
  payload: { id: Schema.String },
  success: Schema.String,
  error: Schema.String,
  ...byId,
})

/** A workflow finalizer, then an activity the workflow's code cuts short with a timeout. */
export const DiffTimeout = Workflow.make("DiffTimeout", {
  payload: { id: Schema.String },
  success: Schema.String,
  ...byId,
})

/** Under `SuspendOnFailure`: a compensated activity, the signal, an activity failing on its first run. */
export const DiffCareful = Workflow.make("DiffCareful", {
  payload: { id: Schema.String },
  success: Schema.String,
  error: Schema.String,
  ...byId,
}).annotate(Workflow.SuspendOnFailure, true)

/** Values whose JSON form differs from their type: a Date, an Option, a BigInt. */
export const DiffValues = Workflow.make("DiffValues", {
  payload: { id: Schema.String, at: Schema.Date },
  success: Schema.Struct({ at: Schema.Date, maybe: Schema.Option(Schema.Number), big: Schema.BigInt }),
  ...byId,
})

/** Dies with a value that is not an Error. */
export const DiffOddDefect = Workflow.make("DiffOddDefect", {
  payload: { id: Schema.String },
  success: Schema.String,
  ...byId,
})

/** The tokens `DiffTokened` published, by execution id. */
export const diffTokens = new Map<string, DurableDeferred.Token>()

/** Publishes `DurableDeferred.token(DiffSignal)` from an activity, then awaits the signal. */
export const DiffTokened = Workflow.make("DiffTokened", {
  payload: { id: Schema.String },
  success: Schema.String,
  error: Schema.String,
  ...byId,
})
