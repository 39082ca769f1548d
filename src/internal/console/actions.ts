/**
 * The console's actions, one entry each: what the page shows (label, confirmation, fields,
 * the Submissions it applies to) and the call it makes. The page reads this list from the
 * server, so adding an action is adding an entry here. An entry without `run` is listed but
 * answers `ConsoleActionUnavailable`: its call is not in this release's Objects yet.
 */
import { Effect, Schema } from "effect"
import type { WaitingKind } from "../object/pageViews.ts"
import type { ThreadClient, ThreadClientError } from "../../ThreadClient.ts"
import { InvalidConsoleRequest } from "./errors.ts"

/** An input the confirmation asks for: free text, or JSON the action decodes. */
export interface ActionField {
  readonly name: string
  readonly label: string
  readonly kind: "text" | "json"
  readonly required: boolean
}

/** What an action acts on: one Submission, or its Object. */
export type ActionScope = "submission" | "object"

/** One action as the page lists it. */
export interface ActionEntry {
  readonly id: string
  readonly label: string
  readonly scope: ActionScope
  /** The Submissions it applies to, by why they are where they are (submission actions). */
  readonly when: ReadonlyArray<WaitingKind>
  /** What the confirmation says will happen. */
  readonly confirm: string
  readonly fields: ReadonlyArray<ActionField>
  /** Whether this release's Objects can do it. */
  readonly available: boolean
}

/** The decoded fields of a request, by name. */
type Fields = Readonly<Record<string, string>>

/** An action's call: on a Thread's client, for a Submission (submission scope) or its Object. */
type Run = (
  client: ThreadClient,
  submissionId: string,
  fields: Fields,
) => Effect.Effect<unknown, ThreadClientError | InvalidConsoleRequest>

interface Action extends Omit<ActionEntry, "available"> {
  readonly run?: Run
}

const UNSETTLED: ReadonlyArray<WaitingKind> = [
  "approval",
  "child",
  "event",
  "sleep",
  "retry",
  "delayed",
  "suspended",
  "unknown-outcome",
  "running",
  "runnable",
  "queued",
  "joined",
  "other",
]

const NOTE_FIELD: ActionField = { name: "note", label: "Note for the record", kind: "text", required: false }

const jsonField = (fields: Fields, name: string) =>
  Effect.try({
    try: () =>
      (fields[name] === undefined || fields[name] === "" ? null : JSON.parse(fields[name])) as Schema.Json,
    catch: () => new InvalidConsoleRequest({ message: `${name} is not JSON` }),
  })

/**
 * The call position of the request the page showed (`explain`'s step), which the page sends
 * with a decision: a request that changed since is then refused (`NotPending`), not decided.
 */
const decidedStep = (fields: Fields) => {
  const raw = fields["step"]
  if (raw === undefined || raw === "") return Effect.succeed(undefined)
  const step = Number(raw)
  return Number.isInteger(step) && step >= 0
    ? Effect.succeed({ step })
    : Effect.fail(
        new InvalidConsoleRequest({
          message: `step is a call position (an integer of 0 or more), not ${raw}`,
        }),
      )
}

const optionalNote = (fields: Fields) =>
  fields["note"] === undefined || fields["note"] === "" ? {} : { note: fields["note"] }

/** Every action of the console, in the order the page shows them. @internal */
export const CONSOLE_ACTIONS: ReadonlyArray<Action> = [
  {
    id: "approve",
    label: "Approve",
    scope: "submission",
    when: ["approval"],
    confirm: "Approve the request: the Submission resumes and continues its work.",
    fields: [NOTE_FIELD],
    run: (client, id, fields) =>
      Effect.flatMap(decidedStep(fields), (step) =>
        client.resolveApproval(id, { approved: true, ...optionalNote(fields) }, step),
      ),
  },
  {
    id: "deny",
    label: "Deny",
    scope: "submission",
    when: ["approval"],
    confirm: "Deny the request: the Submission resumes with the denial.",
    fields: [NOTE_FIELD],
    run: (client, id, fields) =>
      Effect.flatMap(decidedStep(fields), (step) =>
        client.resolveApproval(id, { approved: false, ...optionalNote(fields) }, step),
      ),
  },
  {
    id: "resolve-happened",
    label: "Resolve: it happened",
    scope: "submission",
    when: ["unknown-outcome"],
    confirm: "Record that the uncertain effect happened, with its result: the step is not run again.",
    fields: [{ name: "value", label: "The step's result (JSON)", kind: "json", required: false }],
    run: (client, id, fields) =>
      Effect.flatMap(Effect.all([jsonField(fields, "value"), decidedStep(fields)]), ([value, step]) =>
        client.resolveUnknown(id, { _tag: "Succeeded", value }, step),
      ),
  },
  {
    id: "resolve-failed",
    label: "Resolve: it did not happen",
    scope: "submission",
    when: ["unknown-outcome"],
    confirm: "Record that the uncertain effect did not happen: the step fails with this message.",
    fields: [{ name: "message", label: "What happened", kind: "text", required: true }],
    run: (client, id, fields) =>
      Effect.flatMap(decidedStep(fields), (step) =>
        client.resolveUnknown(id, { _tag: "Failed", message: fields["message"] ?? "" }, step),
      ),
  },
  {
    id: "send-event",
    label: "Send event",
    scope: "submission",
    // An event may arrive before its wait, so any unsettled Submission takes one.
    when: UNSETTLED,
    confirm: "Send the event to the Submission: a wait for its name takes it, now or later.",
    fields: [
      { name: "event", label: "Event name", kind: "text", required: true },
      { name: "payload", label: "Payload (JSON)", kind: "json", required: false },
      { name: "eventId", label: "Event id (repeats are ignored)", kind: "text", required: false },
    ],
    run: (client, id, fields) =>
      Effect.flatMap(jsonField(fields, "payload"), (payload) =>
        client.sendEvent(
          id,
          fields["event"] ?? "",
          payload,
          fields["eventId"] === undefined || fields["eventId"] === "" ? {} : { eventId: fields["eventId"] },
        ),
      ),
  },
  {
    id: "retry",
    label: "Retry",
    scope: "submission",
    when: ["running", "runnable"],
    confirm: "Revoke the running Attempt: the next pass claims the Submission again and replays it.",
    fields: [],
    run: (client, id) => client.retry(id),
  },
  {
    id: "abort",
    label: "Abort",
    scope: "submission",
    when: UNSETTLED,
    confirm: "Abort the Submission: it settles as aborted and its program stops at its next step.",
    fields: [],
    run: (client, id) => client.abort(id),
  },
  {
    id: "forget",
    label: "Forget",
    scope: "submission",
    when: ["settled"],
    confirm:
      "Forget the settled Submission: its row, its records and its key are deleted now, without archiving.",
    fields: [],
    run: (client, id) => client.forget(id),
  },
  {
    id: "repair",
    label: "Repair maintenance record",
    scope: "object",
    when: [],
    confirm: "Rebuild the Object's maintenance record from its ledger (nothing changes if it is healthy).",
    fields: [],
    run: (client) => client.repairMaintenance,
  },
]

/** The list the page reads. @internal */
export const actionEntries = (): ReadonlyArray<ActionEntry> =>
  CONSOLE_ACTIONS.map(({ run, ...entry }) => ({ ...entry, available: run !== undefined }))
