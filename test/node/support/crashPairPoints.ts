/**
 * The scenarios and crash points of the two-Object crash suite: a delegating parent whose
 * child runs in the other Object (with an approval, or aborted while it waits), and a tab that
 * follow-ups join. Every subagent point kills one side, and again with the other side dying
 * too; the join points kill the Object the joins live in.
 */
import type { ArmEntry, OrderInput } from "../fixtures/crashProtocol.ts"

/** Which Object of the pair. */
export type Role = "parent" | "child"

/** One client step of a pair scenario. */
export type PairStep =
  | {
      readonly op: "submit"
      readonly lane: string
      readonly key: string
      readonly agentId: string
      /** `childObject` is filled in with the pair's child Object. */
      readonly input: Record<string, unknown>
      readonly mode?: "join"
    }
  | { readonly op: "approve"; readonly role: Role; readonly key: string; readonly approved: boolean }
  | { readonly op: "abort"; readonly key: string }
  | { readonly op: "settle" }

/** A prefix of steps (nothing armed yet) and the one final call after which a crash comes. */
export interface PairScenario {
  readonly name: string
  readonly prefix: ReadonlyArray<PairStep>
  readonly final: PairStep
}

/** One crash point: its scenario and what is armed in which Object. */
export interface PairPoint {
  readonly scenario: PairScenario
  readonly parent?: ArmEntry
  readonly child?: ArmEntry
  /**
   * The other Object dies too: at its next failpoint hit of any kind after this crash (while
   * the first is still down), or, if it has nothing left to do, with the restart.
   */
  readonly peerDies?: boolean
}

const order: OrderInput = { orderId: "o1", amount: 40 }
const large: OrderInput = { orderId: "o2", amount: 150 }

const delegate = (input: OrderInput): PairStep => ({
  op: "submit",
  lane: "desk",
  key: "d1",
  agentId: "delegate",
  input: { ...input },
})

const tab = {
  op: "submit",
  lane: "tab",
  key: "t1",
  agentId: "tab",
  input: { orderId: "t", amount: 10 },
} as const
const join = {
  op: "submit",
  lane: "tab",
  key: "j1",
  agentId: "tab",
  input: { orderId: "j", amount: 5 },
  mode: "join",
} as const

/** The scenarios. */
export const pairScenarios = {
  /** A parent delegates an order to a child in the other Object and reports its confirmation. */
  delegate: { name: "delegate", prefix: [], final: delegate(order) },
  /** The same, but the child's order needs an approval, given at completion. */
  delegateApproval: { name: "delegateApproval", prefix: [], final: delegate(large) },
  /** The parent is aborted while its child waits for an approval: the abort reaches the child. */
  delegateAbort: {
    name: "delegateAbort",
    prefix: [delegate(large), { op: "settle" }],
    final: { op: "abort", key: "d1" },
  },
  /** A follow-up joins a tab that waits for its approval. */
  join: { name: "join", prefix: [tab, { op: "settle" }], final: join },
  /** The approved tab reads its follow-up and both settle together. */
  joinRead: {
    name: "joinRead",
    prefix: [tab, { op: "settle" }, join, { op: "settle" }],
    final: { op: "approve", role: "parent", key: "t1", approved: true },
  },
  /** The tab is denied before it read its follow-up: the follow-up runs as a tab of its own. */
  joinRevert: {
    name: "joinRevert",
    prefix: [tab, { op: "settle" }, join, { op: "settle" }],
    final: { op: "approve", role: "parent", key: "t1", approved: false },
  },
} as const satisfies Record<string, PairScenario>

const crash = (kind: ArmEntry["kind"], location: string, extra: Partial<ArmEntry> = {}): ArmEntry => ({
  kind,
  location,
  action: "crash",
  freeze: true,
  ...extra,
})
const runtime = (location: string, extra?: Partial<ArmEntry>) => crash("runtime", location, extra)

const s = pairScenarios

/** Every subagent, delivery and abort-propagation boundary, killing the parent or the child. */
const subagentPoints: ReadonlyArray<PairPoint> = [
  { scenario: s.delegate, parent: runtime("child:after-start-append") },
  { scenario: s.delegate, parent: runtime("child:after-await-append") },
  // The park of a parent awaiting its child, which checks for the child's settlement.
  { scenario: s.delegate, parent: runtime("ledger:park:before") },
  // The child's settlement resuming its waiting parent, in one transaction.
  { scenario: s.delegate, parent: runtime("ledger:transition:before") },
  { scenario: s.delegate, parent: runtime("delivery:after-reply") },
  { scenario: s.delegate, parent: runtime("child:after-settled-append") },
  {
    scenario: s.delegate,
    parent: crash("storage", "storage:sql:before", { match: "insert effect_agent_outbox" }),
  },
  { scenario: s.delegate, child: runtime("child:after-admit") },
  { scenario: s.delegate, child: runtime("ledger:admit:after") },
  { scenario: s.delegate, child: runtime("ledger:settle:before") },
  { scenario: s.delegate, child: runtime("child:after-marker-append") },
  { scenario: s.delegate, child: runtime("delivery:after-reply") },
  { scenario: s.delegate, child: runtime("child:after-marker-ack") },
  {
    scenario: s.delegate,
    child: crash("storage", "storage:sql:after", { match: "insert effect_agent_outbox" }),
  },
  // Both die: the parent once its child was admitted, the child once its settlement is recorded.
  {
    scenario: s.delegate,
    parent: runtime("delivery:after-reply"),
    child: runtime("child:after-marker-append"),
  },
  { scenario: s.delegateApproval, child: runtime("approval:after-request-append") },
  { scenario: s.delegateAbort, parent: runtime("ledger:settle:after") },
  { scenario: s.delegateAbort, parent: runtime("delivery:after-reply") },
  { scenario: s.delegateAbort, child: runtime("abort:after-intent") },
  // Both die: the parent once its child took the abort, the child once its aborted settlement is recorded.
  {
    scenario: s.delegateAbort,
    parent: runtime("delivery:after-reply"),
    child: runtime("child:after-marker-append"),
  },
  { scenario: s.delegateAbort, parent: runtime("ledger:settle:before") },
]

/** Every joined-input boundary: joins live in one Object, so only the parent's is killed. */
const joinPoints: ReadonlyArray<PairPoint> = [
  // A join is claimed by its admission.
  { scenario: s.join, parent: runtime("ledger:admit:before") },
  { scenario: s.join, parent: runtime("ledger:admit:after") },
  { scenario: s.join, parent: runtime("join:after-claim") },
  { scenario: s.joinRead, parent: runtime("join:after-canonical-append") },
  { scenario: s.joinRead, parent: runtime("ledger:mark-joined:before") },
  { scenario: s.joinRead, parent: runtime("ledger:mark-joined:after") },
  { scenario: s.joinRevert, parent: runtime("ledger:revert-joining:before") },
  { scenario: s.joinRevert, parent: runtime("ledger:revert-joining:after") },
]

/**
 * Every point: the subagent points killing one side, each again with the other side dying
 * too, and the join points.
 */
export const pairPoints: ReadonlyArray<PairPoint> = [
  ...subagentPoints,
  ...subagentPoints
    .filter((point) => (point.parent === undefined) !== (point.child === undefined))
    .map((point) => ({ ...point, peerDies: true })),
  ...joinPoints,
]
