// @ts-check
// One Submission's records as a timeline: steps as bars from the record before them to their
// result, waits (approval, child, an uncertain step) as bars from their start to their end or
// to now, and the rest as marks. A record kind this page does not know shows as a mark with
// its fields, so the records of a newer release still appear.
import { formatDuration, formatTime, h, link, summary } from "./dom.js"
import { objectRoute } from "./refs.js"

/** @typedef {import("./refs.js").ObjectRef} ObjectRef */

/** @typedef {{ threadId: string, sequence: number, submissionId: string, recordedAt: number, entry: { _tag: string } & Record<string, any> }} HistoryRecord */
/** @typedef {{ namespace: string, objectName?: string, objectId?: string }} ObjectAddress */
/** @typedef {{ route: string, label: string } | { text: string }} Reference */
/**
 * @typedef {object} TimelineItem
 * @property {"step" | "wait" | "child" | "mark" | "settlement"} kind
 * @property {string} label
 * @property {number} start
 * @property {number | undefined} end  undefined while it lasts
 * @property {"ok" | "failed" | "open" | "uncertain" | "info"} status
 * @property {Array<string>} notes
 * @property {Array<Reference>} references
 * @property {Array<number>} sequences  the records it shows
 */

/**
 * A reference to a Submission in the Object at `address`: a console link when this console
 * serves its namespace, its address as text otherwise.
 * @param {ObjectAddress} address
 * @param {string} threadId
 * @param {{ submissionId?: string, idempotencyKey?: string }} target
 * @param {string} label
 * @param {string | undefined} namespaceBinding
 * @returns {Reference}
 */
function referenceTo(address, threadId, target, label, namespaceBinding) {
  /** @type {ObjectRef} */
  const ref =
    address.objectName !== undefined
      ? { by: "name", key: address.objectName }
      : { by: "id", key: address.objectId ?? "" }
  const object = ref.by === "name" ? ref.key : `id ${ref.key.slice(0, 12)}…`
  if (namespaceBinding !== undefined && namespaceBinding !== address.namespace)
    return { text: `${label}: Object ${object} of ${address.namespace}, Thread ${threadId}` }
  const tail =
    target.submissionId !== undefined ? ["s", target.submissionId] : ["k", target.idempotencyKey ?? ""]
  return {
    route: objectRoute(ref, ["t", threadId, ...tail]),
    label: `${label} (${object} / ${threadId})`,
  }
}

/**
 * Builds the timeline of one Submission's records, oldest first.
 * @param {Array<HistoryRecord>} records
 * @param {{ namespaceBinding: string | undefined, object: ObjectRef }} context
 * @returns {Array<TimelineItem>}
 */
export function buildTimeline(records, context) {
  /** @type {Array<TimelineItem>} */
  const items = []
  /** @type {Map<string, TimelineItem>} */
  const open = new Map()
  let previous = records[0]?.recordedAt ?? 0
  /** @param {Partial<TimelineItem> & Pick<TimelineItem, "kind" | "label" | "start">} item */
  const add = (item) => {
    const full = { end: item.start, status: "info", notes: [], references: [], sequences: [], ...item }
    items.push(/** @type {TimelineItem} */ (full))
    return /** @type {TimelineItem} */ (full)
  }
  /** @param {string} key @param {number} at @param {TimelineItem["status"]} status @param {string} [note] */
  const close = (key, at, status, note) => {
    const item = open.get(key)
    if (item === undefined) return undefined
    item.end = at
    item.status = status
    if (note !== undefined) item.notes.push(note)
    open.delete(key)
    return item
  }
  for (const record of records) {
    const entry = record.entry
    const at = record.recordedAt
    const seen = (/** @type {TimelineItem | undefined} */ item) => item?.sequences.push(record.sequence)
    switch (entry._tag) {
      case "SubmissionAccepted": {
        const item = add({
          kind: "mark",
          label: `accepted for ${entry.agentId}`,
          start: at,
          notes: [`input ${summary(entry.input, 400)}`],
        })
        if (entry.parent !== undefined)
          item.references.push(
            referenceTo(
              entry.parent.address,
              entry.parent.threadId,
              { submissionId: entry.parent.submissionId },
              "parent",
              context.namespaceBinding,
            ),
          )
        if (entry.host !== undefined) item.notes.push(`joined into ${entry.host}`)
        seen(item)
        break
      }
      case "StepCompleted":
      case "StepFailed": {
        const failed = entry._tag === "StepFailed"
        const note = failed ? `failed: ${entry.error}` : `result ${summary(entry.result)}`
        const uncertain = close(`uncertain:${entry.step}`, at, failed ? "failed" : "ok", note)
        seen(
          uncertain ??
            add({
              kind: "step",
              label: `step ${entry.step} · ${entry.name}`,
              start: previous,
              end: at,
              status: failed ? "failed" : "ok",
              notes: [note],
            }),
        )
        break
      }
      case "UncertainStepStarted": {
        const item = add({
          kind: "step",
          label: `step ${entry.step} · ${entry.name} (uncertain)`,
          start: at,
          end: undefined,
          status: "uncertain",
        })
        if (entry.reconcileAttempts !== undefined)
          item.notes.push(`reconcile allowed ${entry.reconcileAttempts} time(s)`)
        open.set(`uncertain:${entry.step}`, item)
        seen(item)
        break
      }
      case "ReconcileStarted": {
        const item = open.get(`uncertain:${entry.step}`)
        item?.notes.push(`reconcile #${entry.attempt} started ${formatTime(at)}`)
        seen(item)
        break
      }
      case "ReconcileAnswered": {
        const item = open.get(`uncertain:${entry.step}`)
        const answer = entry.answer
        const said =
          answer._tag === "Happened"
            ? `it happened, ${summary(answer.value)}`
            : answer._tag === "NotHappened"
              ? "it did not happen: the step runs again"
              : answer._tag === "CannotTell"
                ? `cannot tell: ${answer.reason}`
                : answer._tag === "Failed"
                  ? `the reconcile failed: ${answer.message}; again after ${formatTime(answer.retryAt)}`
                  : summary(answer)
        item?.notes.push(`reconcile #${entry.attempt} answered: ${said}`)
        seen(item)
        break
      }
      case "UnknownOutcomeRecorded": {
        const item = open.get(`uncertain:${entry.step}`)
        if (item !== undefined) item.notes.push(`outcome unknown since ${formatTime(at)}`)
        seen(item)
        break
      }
      case "UnknownOutcomeResolved": {
        const resolution = entry.resolution
        const ok = resolution._tag === "Succeeded"
        const note = ok
          ? `resolved: it happened, ${summary(resolution.value)}`
          : `resolved: it did not happen (${resolution.message})`
        seen(
          close(`uncertain:${entry.step}`, at, ok ? "ok" : "failed", note) ??
            add({ kind: "mark", label: `step ${entry.step} resolved`, start: at, notes: [note] }),
        )
        break
      }
      case "ApprovalRequested": {
        const item = add({
          kind: "wait",
          label: `approval at step ${entry.step}`,
          start: at,
          end: undefined,
          status: "open",
          notes: [`asks ${summary(entry.payload, 400)}`],
        })
        open.set(`approval:${entry.step}`, item)
        seen(item)
        break
      }
      case "ApprovalResolved": {
        const note = `${entry.approved ? "approved" : "denied"}${entry.note === undefined ? "" : `: ${entry.note}`}`
        seen(
          close(`approval:${entry.step}`, at, entry.approved ? "ok" : "failed", note) ??
            add({ kind: "mark", label: note, start: at }),
        )
        break
      }
      case "ChildStarted": {
        const item = add({
          kind: "child",
          label: `child ${entry.agentId} at step ${entry.step}`,
          start: at,
          end: undefined,
          status: "open",
          notes: [`input ${summary(entry.input)}`],
        })
        item.references.push(
          referenceTo(
            entry.target,
            entry.threadId,
            { idempotencyKey: entry.idempotencyKey },
            "child",
            context.namespaceBinding,
          ),
        )
        open.set(`child:${entry.step}`, item)
        seen(item)
        break
      }
      case "ChildAwaited": {
        const item = open.get(`child:${entry.child}`)
        item?.notes.push(`awaited from step ${entry.step} at ${formatTime(at)}`)
        seen(item)
        break
      }
      case "ChildSettled": {
        const outcome = entry.refused !== undefined ? `refused (${entry.refused})` : entry.outcome
        const detail =
          entry.error !== undefined
            ? `: ${entry.error}`
            : entry.output !== undefined
              ? `, ${summary(entry.output)}`
              : ""
        const item = close(
          `child:${entry.step}`,
          at,
          entry.outcome === "completed" ? "ok" : "failed",
          `settled ${outcome}${detail}`,
        )
        const started = records.find(
          (other) => other.entry._tag === "ChildStarted" && other.entry.step === entry.step,
        )?.entry
        if (item !== undefined && started !== undefined && entry.childSubmissionId !== undefined) {
          item.references = [
            referenceTo(
              started.target,
              started.threadId,
              { submissionId: entry.childSubmissionId },
              "child",
              context.namespaceBinding,
            ),
          ]
        }
        seen(
          item ?? add({ kind: "mark", label: `child at step ${entry.step} settled ${outcome}`, start: at }),
        )
        break
      }
      case "InputJoined": {
        const item = add({
          kind: "mark",
          label: `read ${entry.joined.length} joined input(s) at step ${entry.step}`,
          start: at,
        })
        for (const joined of entry.joined) {
          item.notes.push(`${joined.submissionId}: ${summary(joined.input)}`)
          item.references.push({
            route: objectRoute(context.object, ["t", record.threadId, "s", joined.submissionId]),
            label: `joined ${joined.submissionId.slice(0, 10)}…`,
          })
        }
        seen(item)
        break
      }
      case "InputApplied":
        seen(add({ kind: "mark", label: "input applied", start: at }))
        break
      case "AbortRequested":
        seen(add({ kind: "mark", label: "abort requested", start: at, status: "failed" }))
        break
      case "SubmissionSettled": {
        for (const key of open.keys()) close(key, at, "info", "ended by the settlement")
        const detail =
          entry.error !== undefined
            ? entry.error
            : entry.output !== undefined
              ? summary(entry.output, 400)
              : ""
        seen(
          add({
            kind: "settlement",
            label: `settled ${entry.outcome}`,
            start: at,
            status: entry.outcome === "completed" ? "ok" : "failed",
            notes: detail === "" ? [] : [detail],
          }),
        )
        break
      }
      default: {
        // A kind of a newer release: shown with its fields, and its due time when it has one.
        const { _tag, ...fields } = entry
        const item = add({ kind: "mark", label: _tag, start: at, notes: [summary(fields, 400)] })
        if (typeof fields["dueAt"] === "number") item.notes.push(`due ${formatTime(fields["dueAt"])}`)
        seen(item)
      }
    }
    previous = at
  }
  return items
}

/**
 * Draws a timeline: each item a row with its label, its bar on the shared time axis, its times
 * and duration, its notes and links.
 * @param {Array<TimelineItem>} items
 * @param {number} now  where open bars end
 * @returns {HTMLElement}
 */
export function renderTimeline(items, now) {
  const start = Math.min(...items.map((item) => item.start))
  const end = Math.max(now, ...items.map((item) => item.end ?? now))
  const span = Math.max(1, end - start)
  const list = h("ol", { class: "timeline" })
  for (const item of items) {
    const until = item.end ?? now
    const bar = h("span", {
      class: `bar ${item.kind} ${item.status}${item.end === undefined ? " lasting" : ""}`,
    })
    bar.style.left = `${((item.start - start) / span) * 100}%`
    bar.style.width =
      item.kind === "mark" || item.kind === "settlement"
        ? ""
        : `${Math.max(0.4, ((until - item.start) / span) * 100)}%`
    const timing =
      item.kind === "mark" || item.kind === "settlement"
        ? formatTime(item.start)
        : item.end === undefined
          ? `since ${formatTime(item.start)}, ${formatDuration(now - item.start)} so far`
          : `${formatTime(item.start)} → ${formatTime(item.end)} (${formatDuration(item.end - item.start)})`
    list.append(
      h(
        "li",
        { class: `item ${item.kind} ${item.status}`, "data-kind": item.kind, "data-status": item.status },
        [
          h("div", { class: "label" }, [
            h("span", { class: "what", text: item.label }),
            h("span", { class: "when", text: timing }),
          ]),
          h("div", { class: "track", "aria-hidden": "true" }, [bar]),
          item.notes.length === 0 && item.references.length === 0
            ? undefined
            : h("ul", { class: "notes" }, [
                ...item.notes.map((note) => h("li", { text: note })),
                ...item.references.map((reference) =>
                  h("li", {}, [
                    "route" in reference ? link(reference.route, reference.label) : reference.text,
                  ]),
                ),
              ]),
        ],
      ),
    )
  }
  return list
}
