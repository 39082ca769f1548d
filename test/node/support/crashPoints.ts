/**
 * What the crash suite runs: a scenario is a prefix of client steps (run before anything is
 * armed; it may crash on purpose, e.g. to leave an Unknown Outcome), failpoints armed ahead of
 * the target, and exactly one final client call: after the target crash there is no further
 * client call, so convergence is up to alarm delivery alone. A crash point names the failpoint
 * the crash is armed at and the scenario that reaches it. The scenarios and points themselves
 * are in `crashRestart.test.ts`, beside the tests that run them.
 */
import type { ArmEntry, FailpointKind, OrderInput } from "../fixtures/crashProtocol.ts"
/** One client step, addressed by idempotency key. */
export type Step =
  | {
      readonly op: "submit"
      readonly lane: string
      readonly key: string
      readonly input: OrderInput
      readonly agentId?: string
    }
  | { readonly op: "approve"; readonly key: string; readonly approved: boolean; readonly note: string }
  | { readonly op: "abort"; readonly key: string }
  /** Sends the courier event (idempotent by `eventId`) to the Submission under `key`. */
  | { readonly op: "event"; readonly key: string; readonly eventId: string; readonly courier: string }
  /** The operator resolves an Unknown Outcome from the supplier's records (charging if absent). */
  | { readonly op: "resolve"; readonly key: string }
  | { readonly op: "arm"; readonly entries: ReadonlyArray<ArmEntry> }
  /** Waits (reading only) until the Object is quiescent. */
  | { readonly op: "settle" }
  /** Garbles the stored maintenance record (behind the library's back). */
  | { readonly op: "damage" }
  /** The operator's `repairMaintenance`. */
  | { readonly op: "repair" }

export interface Scenario {
  readonly name: string
  readonly prefix: ReadonlyArray<Step>
  /** Armed together with (ahead of) the target, consumed in order. */
  readonly before: ReadonlyArray<ArmEntry>
  readonly final: Step
}

/** One armed crash and the scenario that reaches it. */
export interface CrashPoint {
  readonly kind: FailpointKind
  readonly location: string
  readonly scenario: Scenario
  readonly match?: string
  readonly skip?: number
  /** The crash cuts the charge after its start was journaled: `k1` must end in an Unknown Outcome. */
  readonly unknown?: boolean
}

/** A crash point. */
export const point = (
  kind: FailpointKind,
  location: string,
  scenario: Scenario,
  options: Omit<CrashPoint, "kind" | "location" | "scenario"> = {},
): CrashPoint => ({ kind, location, scenario, ...options })

/** A unique, readable Object name for a point. */
export const pointName = (p: CrashPoint): string =>
  [p.kind, p.location, p.scenario.name, p.match ?? "", p.skip === undefined ? "" : `skip${p.skip}`]
    .filter((part) => part !== "")
    .join(" ")
