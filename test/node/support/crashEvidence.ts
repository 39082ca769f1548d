/**
 * Evidence checks over a raw storage view: the invariants every quiescent Object must satisfy,
 * and the normalised canonical history compared with a crash-free control run.
 *
 * Normalisation, and why each step is sound:
 * - Records are grouped per Submission and keyed by idempotency key, dropping Thread ids,
 *   sequences, Submission ids and timestamps: ids are random and times differ per run.
 *   Interleaving of different Submissions of one lane is not compared (an accepted abort of a
 *   queued Submission is recorded whenever a pass reaches it); FIFO order is checked instead.
 * - A child's idempotency key and the fields that carry random ids of another Object (a
 *   child's key and Object name in `ChildStarted`, its Submission id in `ChildSettled`, the
 *   parent's ids in the child's acceptance, the joined Submissions' ids) are reduced to what
 *   the run decides: the call position, the outcome, the inputs.
 * - `UnknownOutcomeRecorded` is dropped and `UnknownOutcomeResolved` becomes the step result
 *   it supplies (`StepCompleted`/`StepFailed` under the uncertain step's name): a crash inside
 *   an uncertain step legitimately adds the Unknown Outcome, and the operator's resolution
 *   (taken from the supplier's own record) then stands for the result the crash cut off.
 * - `ReconcileStarted` is dropped and `ReconcileAnswered` loses its attempt number: a crash
 *   during a reconcile legitimately costs one attempt, and the answer is what counts.
 * - The instants durable waits journal (`dueAt`, `failedAt`, `retryAt`) are dropped: they are
 *   clock readings of the run; which waits happened, and in what order, is compared.
 */
import type { RawRecord, RawView } from "../fixtures/crashProtocol.ts"

type Entry = Readonly<Record<string, unknown>> & { readonly _tag: string }

const entryOf = (record: RawRecord): Entry => record.entry as Entry

/** Records of each Submission, oldest first. */
const bySubmission = (view: RawView): Map<string, Array<RawRecord>> => {
  const groups = new Map<string, Array<RawRecord>>()
  for (const record of view.history) {
    const group = groups.get(record.submissionId) ?? []
    group.push(record)
    groups.set(record.submissionId, group)
  }
  return groups
}

/** A row's key, `lane/idempotencyKey`; a child's key (`parent:<id>@<attempt>:<step>`) becomes `child@<step>`. */
export const rowKey = (row: { readonly threadId: string; readonly idempotencyKey: string }): string =>
  `${row.threadId}/${row.idempotencyKey.replace(/^parent:.+:(\d+)$/, "child@$1")}`

/** An entry without the ids another Object or run chose. */
const withoutForeignIds = (entry: Entry): Entry => {
  switch (entry._tag) {
    case "ChildStarted": {
      const { idempotencyKey: _key, target: _target, ...rest } = entry
      return rest as Entry
    }
    case "ChildSettled": {
      const { childSubmissionId: _child, ...rest } = entry
      return rest as Entry
    }
    case "SubmissionAccepted": {
      const { parent, host, ...rest } = entry as Entry & { parent?: { step: number }; host?: string }
      return {
        ...rest,
        ...(parent === undefined ? {} : { parentStep: parent.step }),
        ...(host === undefined ? {} : { joined: true }),
      } as Entry
    }
    case "SubmissionSettled": {
      const { host, ...rest } = entry as Entry & { host?: string }
      return (host === undefined ? rest : { ...rest, withHost: true }) as Entry
    }
    case "InputJoined":
      return { ...entry, joined: (entry["joined"] as Array<{ input: unknown }>).map((item) => item.input) }
    default: {
      const { dueAt: _due, failedAt: _failed, retryAt: _retry, ...rest } = entry
      return rest as Entry
    }
  }
}

/** The normalised history of each Submission, by idempotency key. */
export const normalizedHistory = (view: RawView): Record<string, ReadonlyArray<unknown>> => {
  const groups = bySubmission(view)
  const result: Record<string, ReadonlyArray<unknown>> = {}
  for (const row of view.submissions) {
    const entries = (groups.get(row.submissionId) ?? []).map(entryOf)
    const names = new Map<unknown, unknown>()
    for (const entry of entries)
      if (entry._tag === "UncertainStepStarted") names.set(entry["step"], entry["name"])
    result[rowKey(row)] = entries.flatMap((entry): Array<unknown> => {
      if (entry._tag === "UnknownOutcomeRecorded" || entry._tag === "ReconcileStarted") return []
      if (entry._tag === "ReconcileAnswered") return [{ ...entry, attempt: undefined }]
      if (entry._tag !== "UnknownOutcomeResolved") return [withoutForeignIds(entry)]
      const resolution = entry["resolution"] as { _tag: string; value?: unknown; message?: string }
      const step = entry["step"]
      const name = names.get(step)
      return resolution._tag === "Succeeded"
        ? [{ _tag: "StepCompleted", step, name, result: resolution.value }]
        : [{ _tag: "StepFailed", step, name, error: resolution.message }]
    })
  }
  return result
}

/** The state of each Submission by `lane/key`; settled ones carry their outcome. */
export const statesOf = (view: RawView): Record<string, string> =>
  Object.fromEntries(
    view.submissions.map((row) => {
      const outcome = (row.settlement as { outcome?: string } | null)?.outcome
      return [rowKey(row), outcome === undefined ? row.state : `settled:${outcome}`]
    }),
  )

/** How often the supplier performed `operation` for each Submission, by `lane/key`. */
export const supplierCounts = (view: RawView, operation: string): Record<string, number> =>
  Object.fromEntries(
    view.submissions.map((row) => [
      rowKey(row),
      view.supplier.filter(
        (call) => call.operation === operation && call.reference === `${row.threadId}/${row.submissionId}`,
      ).length,
    ]),
  )

/** How many `UnknownOutcomeRecorded` records the view holds. */
export const unknownOutcomes = (view: RawView): number =>
  view.history.filter((record) => entryOf(record)._tag === "UnknownOutcomeRecorded").length

const stableWait = (state: string) =>
  state === "suspended" || state === "unknown" || state === "joining" || state === "joined"

/**
 * Violations of the quiescence invariants: alarm cleared, `dirty == processed`, gap-free
 * sequences, one settlement per Submission agreeing with its row, no step journaled twice,
 * no charge performed twice, FIFO per lane, and every nonterminal row a stable external wait
 * or queued behind one.
 */
export const invariantViolations = (view: RawView): Array<string> => {
  const problems: Array<string> = []
  if (view.alarm !== null) problems.push(`the alarm is still set (${view.alarm})`)
  if (view.alarmDelivered) problems.push("an alarm was still pending at inspection")
  for (const message of view.outbox)
    if (!message.acknowledged) problems.push(`message ${message.messageId} was never acknowledged`)
  // An Object whose storage holds nothing was never built (a read builds nothing): no record.
  if (view.record === null) {
    if (!view.empty) problems.push("no maintenance record")
  } else if (view.record.dirty !== view.record.processed)
    problems.push(`dirty ${view.record.dirty} != processed ${view.record.processed}`)

  const lanes = new Map<string, Array<RawRecord>>()
  for (const record of view.history)
    lanes.set(record.threadId, [...(lanes.get(record.threadId) ?? []), record])
  for (const [lane, records] of lanes) {
    records.forEach((record, index) => {
      if (record.sequence !== index + 1)
        problems.push(`lane ${lane}: sequence ${record.sequence} at ${index + 1}`)
    })
  }

  const groups = bySubmission(view)
  for (const row of view.submissions) {
    const key = `${row.threadId}/${row.idempotencyKey}`
    const entries = (groups.get(row.submissionId) ?? []).map(entryOf)
    const settled = entries.filter((entry) => entry._tag === "SubmissionSettled")
    if (settled.length > 1) problems.push(`${key}: settled ${settled.length} times`)
    if (row.state === "settled") {
      const outcome = (row.settlement as { outcome?: string } | null)?.outcome
      if (settled.length !== 1) problems.push(`${key}: settled row without one settlement record`)
      else if (settled[0]?.["outcome"] !== outcome)
        problems.push(`${key}: row outcome ${outcome} but history ${String(settled[0]?.["outcome"])}`)
    } else if (settled.length > 0) problems.push(`${key}: settlement recorded but the row is ${row.state}`)
    if (entries.filter((entry) => entry._tag === "SubmissionAccepted").length !== 1)
      problems.push(`${key}: not accepted exactly once`)
    // An uncertain step starts again only after a reconcile found it did not happen.
    const reruns = entries.filter(
      (entry) =>
        entry._tag === "ReconcileAnswered" && (entry["answer"] as { _tag: string })._tag === "NotHappened",
    ).length
    for (const tag of ["StepCompleted", "StepFailed", "UncertainStepStarted", "UnknownOutcomeRecorded"]) {
      const steps = entries.filter((entry) => entry._tag === tag).map((entry) => entry["step"])
      const allowed = tag === "UncertainStepStarted" || tag === "UnknownOutcomeRecorded" ? reruns : 0
      if (steps.length - new Set(steps).size > allowed)
        problems.push(`${key}: ${tag} journaled twice for a step`)
    }
    const results = entries
      .filter((entry) => entry._tag === "StepCompleted" || entry._tag === "StepFailed")
      .map((entry) => entry["step"])
    if (new Set(results).size !== results.length) problems.push(`${key}: a step has two results`)
    const charges = view.supplier.filter(
      (call) => call.operation === "charge" && call.reference === `${row.threadId}/${row.submissionId}`,
    ).length
    if (charges > 1) problems.push(`${key}: charged ${charges} times`)
  }

  // FIFO: a Submission's input is applied only after every earlier one of its lane settled.
  const rowsByLane = new Map<string, Array<(typeof view.submissions)[number]>>()
  for (const row of view.submissions)
    rowsByLane.set(row.threadId, [...(rowsByLane.get(row.threadId) ?? []), row])
  for (const [lane, rows] of rowsByLane) {
    const records = lanes.get(lane) ?? []
    const position = (submissionId: string, tag: string) =>
      records.findIndex((record) => record.submissionId === submissionId && entryOf(record)._tag === tag)
    rows.forEach((row, index) => {
      const applied = position(row.submissionId, "InputApplied")
      if (applied < 0) return
      for (const earlier of rows.slice(0, index)) {
        const settledAt = position(earlier.submissionId, "SubmissionSettled")
        if (settledAt < 0 || settledAt > applied)
          problems.push(`lane ${lane}: ${row.idempotencyKey} ran before ${earlier.idempotencyKey} settled`)
      }
    })
    const head = rows.find((row) => row.state !== "settled")
    for (const row of rows) {
      if (row.state === "settled" || stableWait(row.state)) continue
      if (head === undefined || head === row || !stableWait(head.state) || row.state !== "ready")
        problems.push(`lane ${lane}: ${row.idempotencyKey} is ${row.state} at quiescence`)
    }
  }
  return problems
}

/**
 * What spans a parent Object and its children's Object: every child is linked to a parent
 * that journaled its start under the child's key, and its settlement was applied to its parent
 * once (at most once when the parent was aborted).
 */
export const linkViolations = (parent: RawView, children: RawView): Array<string> => {
  const problems: Array<string> = []
  const entries = parent.history.map((record) => ({
    submissionId: record.submissionId,
    entry: record.entry as {
      readonly _tag: string
      readonly step?: number
      readonly idempotencyKey?: string
    },
  }))
  for (const row of children.submissions) {
    const link = row.parent as { submissionId: string; step: number } | null
    if (link === null) continue
    const mine = entries.filter((record) => record.submissionId === link.submissionId)
    const started = mine.find(
      (record) => record.entry._tag === "ChildStarted" && record.entry.step === link.step,
    )
    if (started?.entry.idempotencyKey !== row.idempotencyKey)
      problems.push(`child ${rowKey(row)} is not linked to a parent that started it`)
    const applied = mine.filter(
      (record) => record.entry._tag === "ChildSettled" && record.entry.step === link.step,
    )
    const parentRow = parent.submissions.find((candidate) => candidate.submissionId === link.submissionId)
    const outcome = (parentRow?.settlement as { outcome?: string } | null)?.outcome
    if (applied.length > 1 || (outcome !== "aborted" && applied.length !== 1))
      problems.push(`child ${rowKey(row)} settled into its parent ${applied.length} times`)
  }
  return problems
}

/**
 * The children's view with each child's key (`parent:<id>@<attempt>:<step>`) naming its parent by the
 * parent's own key instead of its random id, so several children stay apart when compared.
 */
export const withParentKeys = (children: RawView, parent: RawView): RawView => {
  const keys = new Map(parent.submissions.map((row) => [row.submissionId, row.idempotencyKey]))
  return {
    ...children,
    submissions: children.submissions.map((row) => {
      const match = /^parent:([^@]+)(?:@[^:]+)?:(\d+)$/.exec(row.idempotencyKey)
      const key = match === null ? undefined : keys.get(match[1] ?? "")
      return key === undefined ? row : { ...row, idempotencyKey: `child of ${key}@${match?.[2]}` }
    }),
  }
}
