/**
 * What the runtime's parts share: the ledger and the history with a failpoint around every
 * write, the registry, wake hints, timing, and the lock that serializes unowned writes.
 */
import { Effect, Semaphore } from "effect"
import type { AgentRegistry } from "../../../AgentRegistration.ts"
import type { SubmissionId } from "../../../Identifiers.ts"
import { type Journal, readJournal } from "./journal.ts"
import type { DurableRuntimeFailpointError, ThreadStoreError } from "./model.ts"
import type { DurableRuntimeSettings } from "../../../DurableRuntimeConfig.ts"
import type { RuntimeFailpointLocation, RuntimeLedgerWrite } from "../../../RuntimeFailpoint.ts"
import type { SubmissionLedger } from "../../../SubmissionLedger.ts"
import type { ThreadHistory } from "../../../ThreadHistory.ts"
import type { WakeScheduler } from "../../../WakeScheduler.ts"
import type { ProgressHubService } from "../../../ProgressHub.ts"
import type { MessageOutbox, SelfAddress } from "../../../MessageOutbox.ts"
import { type LedgerLimits, LedgerError, type SubmissionNotFound } from "../../ledger/model.ts"
import type { AdmissionCapacityService } from "../admission/admissionCapacity.ts"

type Ledger = SubmissionLedger["Service"]
type History = ThreadHistory["Service"]
type Outbox = MessageOutbox["Service"]

const LEDGER_WRITE_NAMES = {
  admit: "admit",
  markJoined: "mark-joined",
  revertJoining: "revert-joining",
  claim: "claim",
  renew: "renew",
  release: "release",
  park: "park",
  transition: "transition",
  requestAbort: "request-abort",
  settle: "settle",
  claimDue: "claim-due",
  deferHead: "defer-head",
  putSchedule: "schedule-put",
  removeSchedule: "schedule-remove",
  advanceSchedule: "occurrence",
} as const satisfies Record<string, RuntimeLedgerWrite>

type WriteKey = keyof typeof LEDGER_WRITE_NAMES | "parkTimed"

type WithFailpoint<F> = F extends (...args: infer Args) => Effect.Effect<infer A, infer E, infer R>
  ? (...args: Args) => Effect.Effect<A, E | DurableRuntimeFailpointError, R>
  : never

/** The ledger as the runtime sees it: every write may stop at a failpoint. @internal */
export type RuntimeLedger = Omit<Ledger, WriteKey> & { readonly [K in WriteKey]: WithFailpoint<Ledger[K]> }

/** The history as the runtime sees it. @internal */
export type RuntimeHistory = Omit<History, "append" | "appendAll"> & {
  readonly append: WithFailpoint<History["append"]>
  readonly appendAll: WithFailpoint<History["appendAll"]>
}

/**
 * The outbox as the runtime sees it: an append with messages is a history append, a settlement
 * with messages is a ledger settlement. @internal
 */
export type RuntimeOutbox = Omit<Outbox, "appendWithMessages" | "settleWithMessages"> & {
  readonly appendWithMessages: WithFailpoint<Outbox["appendWithMessages"]>
  readonly settleWithMessages: WithFailpoint<Outbox["settleWithMessages"]>
}

/** @internal */
export type Hit = (location: RuntimeFailpointLocation) => Effect.Effect<void, DurableRuntimeFailpointError>

/** The runtime's shared services. @internal */
export interface RuntimeEnv {
  readonly ledger: RuntimeLedger
  /**
   * `claim` without its failpoints: an Attempt hits them itself, the `after` one once it holds
   * the Claim, so that a failure there still releases it.
   */
  readonly claimUnhooked: Ledger["claim"]
  /** `claimDue` without its failpoints, for the same reason. */
  readonly claimDueUnhooked: Ledger["claimDue"]
  readonly history: RuntimeHistory
  readonly outbox: RuntimeOutbox
  /** Where this Object is reached, for its children's replies. */
  readonly self: (typeof SelfAddress)["Service"]
  readonly hit: Hit
  readonly registry: AgentRegistry["Service"]
  readonly wake: WakeScheduler["Service"]
  /** Wakes a settlement waiter when a write moves its Submission. */
  readonly progress: ProgressHubService
  readonly settings: DurableRuntimeSettings
  /** The ledger's limits, for what is checked before the ledger sees it (a schedule's input). */
  readonly limits: LedgerLimits
  /** Whether a new admission fits in the host's storage. */
  readonly capacity: AdmissionCapacityService
  /**
   * This incarnation's id (`SubmissionLedger.beginIncarnation`), stamped on its Claims: a later
   * incarnation treats them as expired, while within this one (and for an earlier one still
   * running) the lease protects them.
   */
  readonly incarnation: string
  /**
   * Serializes the runtime's unowned writes (admission materialization, recovery, external
   * resolutions) within this incarnation, so a check and the writes it licenses are not
   * interleaved with another unowned writer. Owners need no lock: their writes are fenced.
   */
  readonly exclusive: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
}

const bracket =
  (hit: Hit, before: RuntimeFailpointLocation, after: RuntimeFailpointLocation) =>
  <Args extends ReadonlyArray<unknown>, A, E, R>(f: (...args: Args) => Effect.Effect<A, E, R>) =>
  (...args: Args): Effect.Effect<A, E | DurableRuntimeFailpointError, R> =>
    hit(before).pipe(
      Effect.andThen(Effect.suspend(() => f(...args))),
      Effect.tap(() => hit(after)),
    )

const instrumentLedger = (ledger: Ledger, hit: Hit): RuntimeLedger => {
  const wrap = <K extends WriteKey>(key: K) => {
    const name = LEDGER_WRITE_NAMES[key === "parkTimed" ? "park" : (key as keyof typeof LEDGER_WRITE_NAMES)]
    return bracket(
      hit,
      `ledger:${name}:before`,
      `ledger:${name}:after`,
    )(
      ledger[key] as (...args: ReadonlyArray<unknown>) => Effect.Effect<unknown, unknown>,
    ) as unknown as RuntimeLedger[K]
  }
  return {
    ...ledger,
    admit: wrap("admit"),
    markJoined: wrap("markJoined"),
    revertJoining: wrap("revertJoining"),
    claim: wrap("claim"),
    renew: wrap("renew"),
    release: wrap("release"),
    park: wrap("park"),
    transition: wrap("transition"),
    requestAbort: wrap("requestAbort"),
    settle: wrap("settle"),
    claimDue: wrap("claimDue"),
    deferHead: wrap("deferHead"),
    putSchedule: wrap("putSchedule"),
    removeSchedule: wrap("removeSchedule"),
    advanceSchedule: wrap("advanceSchedule"),
    // A timed park is a park: the same brackets.
    parkTimed: wrap("parkTimed"),
  }
}

/** Builds the shared services. @internal */
export const makeRuntimeEnv = (services: {
  readonly ledger: Ledger
  readonly history: History
  readonly outbox: Outbox
  readonly self: (typeof SelfAddress)["Service"]
  readonly hit: Hit
  readonly registry: AgentRegistry["Service"]
  readonly wake: WakeScheduler["Service"]
  readonly progress: ProgressHubService
  readonly settings: DurableRuntimeSettings
  readonly limits: LedgerLimits
  readonly capacity: AdmissionCapacityService
  readonly incarnation: string
}): RuntimeEnv => {
  const lock = Semaphore.makeUnsafe(1)
  const appendHooks = bracket(services.hit, "history:append:before", "history:append:after")
  return {
    ...services,
    ledger: instrumentLedger(services.ledger, services.hit),
    claimUnhooked: services.ledger.claim,
    claimDueUnhooked: services.ledger.claimDue,
    history: {
      ...services.history,
      append: appendHooks(services.history.append),
      appendAll: appendHooks(services.history.appendAll),
    },
    outbox: {
      ...services.outbox,
      appendWithMessages: appendHooks(services.outbox.appendWithMessages),
      settleWithMessages: bracket(
        services.hit,
        "ledger:settle:before",
        "ledger:settle:after",
      )(services.outbox.settleWithMessages),
    },
    exclusive: (effect) => Semaphore.withPermit(lock, effect),
  }
}

/** The journal of one Submission, read from its canonical records. @internal */
export const loadJournal = (
  env: RuntimeEnv,
  submissionId: SubmissionId,
): Effect.Effect<Journal, ThreadStoreError> =>
  Effect.map(env.history.forSubmission(submissionId), (records) => {
    const journal = readJournal(records.map((record) => record.entry))
    const last = records[records.length - 1]
    return last === undefined ? journal : { ...journal, through: last.sequence }
  })

/** A row that vanished under a write the runtime just licensed: storage is inconsistent. @internal */
export const vanished =
  (operation: string) =>
  (missing: SubmissionNotFound): LedgerError =>
    new LedgerError({ operation, message: missing.message })
