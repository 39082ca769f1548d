/**
 * What the calls of one Attempt's `AgentContext` share: the kinds of journaled call, and the
 * call positions, journal and appends that `agentContext.ts` hands to the groups of calls
 * defined in their own files (the child calls in `children/agentContextChildren.ts`).
 */
import type { Effect, Schema } from "effect"
import type { AgentFailure, AnyAgentDefinition, JsonCodec } from "../../../AgentRegistration.ts"
import type { WaitRecord } from "../../ledger/model.ts"
import type { RuntimeFailpointLocation } from "../../../RuntimeFailpoint.ts"
import type { HistoryEntry } from "../../history/model.ts"
import type { NewMessage } from "../../outbox/model.ts"
import type { Journal, JournalPosition } from "../shared/journal.ts"
import type { AttemptState } from "./attemptState.ts"

/** The kind of a journaled call. @internal */
export type Kind =
  | "step"
  | "uncertain step"
  | "approval request"
  | "child start"
  | "child await"
  | "joined read"
  | "sleep"
  | "event wait"

/** What a group of calls (the child calls) shares with the other calls of a context. @internal */
export interface ContextCalls {
  readonly attempt: AttemptState
  /** The journal read when the Attempt started. */
  readonly journal: Journal
  readonly agent: AnyAgentDefinition
  /** Takes the next call position. */
  readonly next: () => number
  /** The recorded call at a position, checked against what the program asks for now. */
  readonly recorded: (
    step: number,
    kind: Kind,
    name: string | undefined,
  ) => Effect.Effect<JournalPosition | undefined>
  /**
   * Appends a record of the Attempt, enqueueing `messages` in the same transaction; answers the
   * record's Thread sequence.
   */
  readonly append: (entry: HistoryEntry, messages?: ReadonlyArray<NewMessage>) => Effect.Effect<number>
  readonly hit: (location: RuntimeFailpointLocation) => Effect.Effect<void>
  /** What the Submission's last park waited for, as the row read when the Attempt started says. */
  readonly wait: WaitRecord | undefined
  /** Runs one attempt of a step live and encodes its result; appends nothing. */
  readonly runOnce: <A>(
    name: string,
    effect: Effect.Effect<A, AgentFailure>,
    codec: JsonCodec<A>,
    options: { readonly interruptible: boolean; readonly timeoutMillis?: number | undefined },
  ) => Effect.Effect<StepOutcome<A>>
}

/** One attempt of a step: its encoded result, or its typed failure. @internal */
export type StepOutcome<A> =
  | { readonly _tag: "Succeeded"; readonly value: A; readonly result: Schema.Json }
  | { readonly _tag: "Failed"; readonly failure: AgentFailure }
