// @ts-check
// An Object's obligations on a time axis, beside the alarm it has scheduled and the alarm its
// rules imply: what it owes and when, and whether the alarm covers it. The same facts follow
// as a list, for reading without the picture.
import { formatTime, h } from "./dom.js"

/**
 * @typedef {object} Obligations
 * @property {Array<{ source: string, dueAt: number, threadId?: string, submissionId?: string, detail: string }>} obligations
 * @property {number | null} impliedAlarm
 * @property {number | null} scheduledAlarm
 * @property {{ kind: string, message: string }} [mismatch]
 * @property {{ field: string, message: string }} [damaged]
 * @property {boolean} passRunning
 * @property {number} observedAt
 */

/**
 * @param {Obligations} owed
 * @returns {HTMLElement}
 */
export function renderObligations(owed) {
  /** @type {Array<{ at: number, label: string, kind: string }>} */
  const marks = [
    { at: owed.observedAt, label: "now", kind: "now" },
    ...owed.obligations.map((obligation) => ({
      at: obligation.dueAt,
      label: obligation.source,
      kind: "owed",
    })),
  ]
  if (owed.scheduledAlarm !== null)
    marks.push({ at: owed.scheduledAlarm, label: "scheduled alarm", kind: "alarm" })
  if (owed.impliedAlarm !== null)
    marks.push({ at: owed.impliedAlarm, label: "implied alarm", kind: "implied" })
  const times = marks.map((mark) => mark.at)
  const low = Math.min(...times)
  const high = Math.max(...times)
  const pad = Math.max(1_000, (high - low) * 0.05)
  const span = high - low + 2 * pad
  const axis = h("div", { class: "axis", "aria-hidden": "true" }, [
    h("span", { class: "axis-end start", text: formatTime(low - pad) }),
    h("span", { class: "axis-end finish", text: formatTime(high + pad) }),
  ])
  for (const mark of marks) {
    const node = h("span", { class: `mark ${mark.kind}`, title: `${mark.label} ${formatTime(mark.at)}` }, [
      h("span", { class: "mark-label", text: mark.label }),
    ])
    node.style.left = `${((mark.at - low + pad) / span) * 100}%`
    axis.append(node)
  }
  const facts = h("ul", { class: "facts" }, [
    h("li", { "data-fact": "scheduled", text: `scheduled alarm: ${formatTime(owed.scheduledAlarm)}` }),
    h("li", { text: `implied by the rules: ${formatTime(owed.impliedAlarm)}` }),
    owed.passRunning ? h("li", { text: "a maintenance pass is running" }) : undefined,
    owed.mismatch === undefined
      ? undefined
      : h("li", {
          class: owed.mismatch.kind === "extra" ? "" : "bad",
          text: `alarm ${owed.mismatch.kind}: ${owed.mismatch.message}`,
        }),
    owed.damaged === undefined
      ? undefined
      : h("li", {
          class: "bad",
          text: `maintenance record damaged at ${owed.damaged.field}: ${owed.damaged.message}`,
        }),
    ...(owed.obligations.length === 0
      ? [h("li", { text: "nothing owed" })]
      : owed.obligations.map((obligation) =>
          h("li", {
            text: `${obligation.source} due ${formatTime(obligation.dueAt)}${obligation.threadId === undefined ? "" : ` (Thread ${obligation.threadId})`}: ${obligation.detail}`,
          }),
        )),
  ])
  return h("div", { class: "obligations", "data-scheduled": owed.scheduledAlarm === null ? "none" : "set" }, [
    axis,
    facts,
  ])
}
