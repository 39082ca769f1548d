/**
 * The reads of an Object whose storage holds nothing yet. Answering them from the full
 * incarnation would run the migrations and arm the alarm: dozens of billed rows written and a
 * billed alarm for a read that finds nothing. Each answers as the read does on an empty store
 * (test/bench/ColdReadRows.test.ts compares them with a built, empty Object). A read not listed
 * here builds the incarnation as any other call does.
 */
import { Clock, Effect, Layer, Option } from "effect"
import { CloudflareDurableRuntimeConfig } from "../../CloudflareConfig.ts"
import { alarmTiming } from "../maintenance/alarmPolicy.ts"
import { deriveObligations } from "../operator/obligations.ts"
import { verifyStorage } from "../operator/verify.ts"
import { laneWalk } from "../../core/internal/ledger/pages.ts"
import { notFound } from "./addressed.ts"
import { DurableObjectContext } from "../../CloudflareBindings.ts"
import { configLayers, namespaceLayer, type ThreadObjectOptions } from "./layers.ts"
import type { Authorization } from "./authorization.ts"
import { CALL_NAMES, type CallError, type CallName, type CallRequest, type CallSuccess } from "./calls.ts"
import { admission, type CallHandler, dispatch } from "./dispatch.ts"
import { allowedStates } from "./pageHandlers.ts"
import { SchedulePage, STATES_OF_KIND, SubmissionPage, ThreadPage } from "./pageViews.ts"
import { metricsLayer, readCounters } from "./metrics.ts"
import { readMaintenanceView } from "./operatorReads.ts"
import { HistoryPageView, inspection, MaintenanceInspection, ThreadStatus } from "./statusViews.ts"

type ColdRead =
  | "submissionStatus"
  | "completedStep"
  | "awaitSettlement"
  | "explain"
  | "awaitProgress"
  | "threadStatus"
  | "history"
  | "submissions"
  | "threads"
  | "submissionPage"
  | "threadPage"
  | "findSubmission"
  | "schedules"
  | "schedulePage"
  | "inspectMaintenance"
  | "obligations"
  | "verify"

/** @internal */
export const coldReads: { readonly [K in ColdRead]: CallHandler<K> } = {
  submissionStatus: (request) => Effect.fail(notFound(request)),
  completedStep: (request) => Effect.fail(notFound(request)),
  awaitSettlement: (request) => Effect.fail(notFound(request)),
  explain: (request) => Effect.fail(notFound(request)),
  awaitProgress: (request) => Effect.fail(notFound(request)),
  threadStatus: ({ threadId }) => Effect.succeed(ThreadStatus.make({ threadId, nonterminal: 0 })),
  history: () => Effect.succeed(HistoryPageView.make({ records: [] })),
  submissions: () => Effect.succeed([]),
  threads: () => Effect.succeed([]),
  submissionPage: (request) => {
    const states = allowedStates(
      request.states,
      request.waiting === undefined ? undefined : STATES_OF_KIND[request.waiting],
    )
    // As the page handler: no state allowed answers at once in queue order.
    const order =
      states === undefined
        ? "newest-first"
        : states.length === 0 || laneWalk({ states }) === "unsettled"
          ? "queue"
          : "newest-first"
    return Effect.succeed(SubmissionPage.make({ submissions: [], order }))
  },
  threadPage: () => Effect.succeed(ThreadPage.make({ threads: [], unsettled: 0 })),
  findSubmission: () => Effect.succeed(null),
  schedules: () => Effect.succeed([]),
  schedulePage: () => Effect.succeed(SchedulePage.make({ schedules: [] })),
  // Without a record nothing is owed and no hook's deadline applies (as `deriveObligations`
  // answers a built Object without one); the alarm is the one workerd holds.
  obligations: () =>
    Effect.gen(function* () {
      const config = yield* CloudflareDurableRuntimeConfig
      return deriveObligations({
        maintenance: yield* readMaintenanceView,
        nonterminal: [],
        reports: [],
        hostDeadline: Option.none(),
        publicationDeadline: Option.none(),
        retentionDeadline: Option.none(),
        now: yield* Clock.currentTimeMillis,
        timing: alarmTiming(config),
        timerCoalesceMillis: config.timerCoalesceMillis,
        passRunning: false,
        schedules: [],
      })
    }),
  // Read as the built Object reads it (the alarm workerd holds), and no pass yet. Nothing is
  // owed: a built Object without a record is bootstrapping and owes a pass, but no call has
  // needed this one, and a caller waiting for "nothing owed" must not wait for ever.
  inspectMaintenance: () =>
    Effect.gen(function* () {
      const view = yield* readMaintenanceView
      return MaintenanceInspection.make({ ...inspection(view, yield* readCounters), owed: false })
    }),
  // Every invariant holds over nothing; the alarm and record are read as the built Object reads
  // them, so a key that appeared since the check still shows.
  verify: () =>
    Effect.gen(function* () {
      const config = yield* CloudflareDurableRuntimeConfig
      return verifyStorage({
        timing: alarmTiming(config),
        timerCoalesceMillis: config.timerCoalesceMillis,
        maintenance: yield* readMaintenanceView,
        rows: [],
        records: [],
        counted: { all: 0, lanes: new Map() },
        reports: [],
        now: yield* Clock.currentTimeMillis,
        passRunning: false,
        schedules: [],
      })
    }),
}

/** @internal Whether a call has an answer on a store that holds nothing. */
export const isColdRead = (name: CallName): name is ColdRead => Object.hasOwn(coldReads, name)

/**
 * @internal Whether the Object's storage holds nothing: no table of its own (workerd's `_cf_`
 * tables aside) and no key. Reads at most two rows; synchronous, so nothing interleaves with it.
 */
export const storageIsEmpty = (storage: DurableObjectStorage): boolean => {
  const tables = storage.sql
    .exec(
      "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '\\_cf\\_%' ESCAPE '\\' LIMIT 1",
    )
    .toArray()
  if (tables.length > 0) return false
  for (const _ of storage.kv.list({ limit: 1 })) return false
  return true
}

/**
 * @internal What the cold calls need: the Object's context, its configuration (decoded once, no
 * storage), its namespace and a registry of its own for the counters `inspectMaintenance` reads.
 */
export const coldLayer = (
  ctx: DurableObjectState,
  env: Cloudflare.Env,
  options: Pick<ThreadObjectOptions, "config" | "namespaceBinding">,
) =>
  Layer.mergeAll(
    DurableObjectContext.layer(ctx, env),
    configLayers(options.config),
    metricsLayer,
    // Checked as the built Object checks it: a misnamed binding fails every call alike.
    namespaceLayer(ctx, env, options.namespaceBinding),
  )

/** @internal */
export type ColdServices = Layer.Success<ReturnType<typeof coldLayer>>

/** @internal The cold reads as the Object runs them. */
export type ColdCalls = {
  readonly [K in ColdRead]: (
    request: unknown,
    caller?: unknown,
  ) => Effect.Effect<CallSuccess<K>, CallError<K>, ColdServices>
}

/** @internal Every cold read, decoded and authorized as the built Object does. */
export const coldCalls = (authorization: Authorization | undefined): ColdCalls =>
  Object.fromEntries(
    Object.entries(coldReads).map(([name, handler]) => [
      name,
      dispatch(name as ColdRead, handler as CallHandler<ColdRead>, authorization),
    ]),
  ) as unknown as ColdCalls

/** @internal Every call's admission (decode, authorization), run before the Object is built. */
export type ColdAdmissions = {
  readonly [K in CallName]: (
    request: unknown,
    caller?: unknown,
  ) => Effect.Effect<CallRequest<K>, CallError<K>, ColdServices>
}

/** @internal */
export const coldAdmissions = (authorization: Authorization | undefined): ColdAdmissions =>
  Object.fromEntries(
    CALL_NAMES.map((name) => [name, admission(name, authorization)]),
  ) as unknown as ColdAdmissions
