/**
 * Type-level checks of the client, proved by `tsc` (`npm run typecheck`), never run: each call
 * fails with exactly its own errors, and an agent's typed client takes the agent's input type
 * and answers with its output type.
 */
import type { Effect } from "effect"
import type * as ThreadClient from "@effect-agent/platform-cloudflare/ThreadClient"
import { triage } from "../src/agent"

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false
type Assert<T extends true> = T
type ErrorTags<T> =
  T extends Effect.Effect<unknown, infer E, never>
    ? E extends { readonly _tag: infer Tag }
      ? Tag
      : never
    : never
type Success<T> = T extends Effect.Effect<infer A, unknown, never> ? A : never

declare const client: ThreadClient.ThreadClient
const tickets = client.agent(triage)

type StatusErrors = ErrorTags<ReturnType<ThreadClient.ThreadClient["status"]>>
type SubmitErrors = ErrorTags<ReturnType<ThreadClient.ThreadClient["submit"]>>

export type StatusFailsWithItsOwnErrors = Assert<
  Equal<
    StatusErrors,
    | "SubmissionNotFound"
    | "InvalidRequest"
    | "Unauthorized"
    | "ThreadObjectFailure"
    | "ThreadObjectUnavailable"
  >
>
export type StatusHasNoFenceRejected = Assert<Equal<Extract<StatusErrors, "FenceRejected">, never>>
export type SubmitIncludesAdmissionRefused = Assert<
  Equal<Extract<SubmitErrors, "AdmissionRefused">, "AdmissionRefused">
>
export type SubmitHasNoInternalTags = Assert<
  Equal<Extract<SubmitErrors, "FenceRejected" | "OwnershipLost" | "LedgerError" | "DurableAlarmError">, never>
>
export type TypedSubmitAddsItsEncodeError = Assert<
  Equal<ErrorTags<ReturnType<typeof tickets.submit>>, SubmitErrors | "InvalidAgentInput">
>

type Settled = Success<ReturnType<typeof tickets.awaitSettlement>>
export type TypedSettlementCarriesTheOutput = Assert<
  Equal<
    Extract<Settled, { readonly outcome: "completed" }>["output"],
    { readonly queue: string; readonly reference: string }
  >
>

export const typedSubmissions = [
  tickets.submit({ ticket: "printer jammed" }, { idempotencyKey: "k", mode: "join-or-queue" }),
  // @ts-expect-error a ticket is a string
  tickets.submit({ ticket: 42 }, { idempotencyKey: "k" }),
  // @ts-expect-error the agent's input has no `subject`
  tickets.submit({ subject: "printer jammed" }, { idempotencyKey: "k" }),
  // @ts-expect-error an idempotency key is required
  tickets.submit({ ticket: "printer jammed" }, {}),
]
