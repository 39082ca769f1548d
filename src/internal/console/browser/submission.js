// @ts-check
// One Submission: why it is where it is, the actions that apply, its records as a timeline and
// as raw records, kept live by long-polling its progress (the Object answers as soon as the
// Submission moves, or when the wait times out).
import { actionButtons, actionCatalogue, takeAction } from "./actions.js"
import { api, apiPath, ConsoleError, query } from "./api.js"
import { formatTime, h, link, summary } from "./dom.js"
import { setCrumbs, setLive } from "./frame.js"
import { failure } from "./lists.js"
import { objectApi, objectLabel, objectRoute } from "./refs.js"
import { buildTimeline, renderTimeline } from "./timeline.js"

/** @typedef {import("./timeline.js").HistoryRecord} HistoryRecord */
/** @typedef {import("./lists.js").View} View */
/** @typedef {import("./refs.js").ObjectRef} ObjectRef */

/** How long one progress request waits for a change. */
const PROGRESS_WAIT_MILLIS = 25_000
/** The pause before asking again after a failed progress request. */
const PROGRESS_RETRY_MILLIS = 3_000

/** @type {Promise<string | undefined> | undefined} */
let namespaceBinding

/** The binding name this console serves, if the application named it. */
function servedNamespace() {
  namespaceBinding ??= api("GET", "objects").then(
    (body) => /** @type {string | undefined} */ (body.namespaceBinding),
    () => undefined,
  )
  return namespaceBinding
}

/**
 * The decisive reason of `explain`, in words; a reason of a newer release with its fields.
 * @param {{ _tag: string } & Record<string, any>} reason
 */
function describeReason(reason) {
  switch (reason._tag) {
    case "Settled":
      return `settled ${reason.settlement.outcome}${reason.settlement.error === undefined ? "" : `: ${reason.settlement.error}`}`
    case "WaitingForApproval":
      return `waiting for approval since ${formatTime(reason.since)}: ${summary(reason.payload)}`
    case "JoinedTo":
      return `joined to ${reason.host} (${reason.hostState}), ${reason.read ? "read by it" : "not read yet"}: it settles with it`
    case "QueuedBehind":
      return `queued behind ${reason.head} (${reason.headState}, ${reason.ahead} ahead)`
    case "UnknownOutcome":
      return `unknown outcome of step ${reason.step} "${reason.name}" since ${formatTime(reason.since)}, waiting for ${reason.waitingFor} (reconcile ${reason.reconcile.status}, ${reason.reconcile.started}/${reason.reconcile.allowed})`
    case "BindingWait":
      return `waiting for compatible code for agent ${reason.agentId}, attempt ${reason.attempts}, next try ${formatTime(reason.nextTryAt)}`
    case "LaneBackoff":
      return `maintenance backs off until ${formatTime(reason.until)} (${reason.stalls} stalls)`
    case "HeldByAttempt":
      return `running: attempt ${reason.attemptId}, lease until ${formatTime(reason.leaseExpiresAt)}`
    case "Delayed":
      return `delayed: runs no earlier than ${formatTime(reason.notBefore)}`
    case "WaitingForAlarm":
      return `runnable: the alarm at ${formatTime(reason.at)} serves it${reason.abortRequested ? " (abort accepted)" : ""}${typeof reason.objectKills === "number" ? `; ${reason.objectKills} event(s) in a row died with its Attempt in flight` : ""}`
    case "MaintenanceRecordDamaged":
      return `the maintenance record is damaged at ${reason.field}: repair it`
    default: {
      const { _tag, ...fields } = reason
      return `${_tag} ${summary(fields)}`
    }
  }
}

/**
 * @param {string} label
 * @param {string | Node} value
 */
function fact(label, value) {
  return [h("dt", { text: label }), h("dd", {}, [value])]
}

/**
 * @param {ObjectRef} object
 * @param {string} threadId
 * @param {string} submissionId
 * @returns {View}
 */
export function submissionView(object, threadId, submissionId) {
  return async (root, signal) => {
    setCrumbs([
      { label: objectLabel(object), route: objectRoute(object) },
      { label: `Thread ${threadId}`, route: objectRoute(object, ["t", threadId]) },
      { label: `Submission ${submissionId.slice(0, 10)}…` },
    ])
    const path = apiPath(...objectApi(object), "threads", threadId, "submissions", submissionId)
    const [actions, binding] = await Promise.all([actionCatalogue(), servedNamespace()])
    let rawOpen = false
    /** @param {any} detail */
    const draw = (detail) => {
      const { explanation, progress, waiting } = detail
      const records = /** @type {Array<HistoryRecord>} */ (progress.records)
      const accepted = records.find((record) => record.entry._tag === "SubmissionAccepted")?.entry
      const raw = h("details", { id: "raw" }, [
        h("summary", { text: `Raw records (${records.length})` }),
        h(
          "ol",
          { class: "raw" },
          records.map((record) =>
            h("li", {}, [
              h("span", { class: "when", text: `#${record.sequence} ${formatTime(record.recordedAt)}` }),
              h("pre", { text: JSON.stringify(record.entry, null, 2) }),
            ]),
          ),
        ),
      ])
      if (rawOpen) raw.setAttribute("open", "")
      raw.addEventListener("toggle", () => (rawOpen = /** @type {HTMLDetailsElement} */ (raw).open))
      // A decision answers the request this page shows: one that changed since is refused.
      const reason = explanation.reason
      /** @type {Record<string, string>} */
      const decides =
        (reason._tag === "WaitingForApproval" || reason._tag === "UnknownOutcome") &&
        typeof reason.step === "number"
          ? { step: String(reason.step) }
          : {}
      const buttons = actionButtons(actions, "submission", waiting, (action) =>
        takeAction(
          action,
          apiPath(
            ...objectApi(object),
            "threads",
            threadId,
            "submissions",
            submissionId,
            "actions",
            action.id,
          ),
          `Submission ${submissionId}`,
          () => {
            refresh().catch(() => undefined)
          },
          decides,
        ),
      )
      root.replaceChildren(
        h(
          "article",
          {
            id: "submission",
            "data-submission": submissionId,
            "data-agent": accepted?.agentId ?? "",
            "data-state": progress.state,
            "data-waiting": waiting,
          },
          [
            h("h2", {}, ["Submission ", h("span", { class: "name", text: submissionId })]),
            h("dl", { class: "facts" }, [
              ...fact(
                "Thread",
                link(objectRoute(object, ["t", threadId]), `${threadId} in ${objectLabel(object)}`),
              ),
              ...fact("State", progress.state),
              ...fact("Why", waiting),
              ...fact("Explained", describeReason(explanation.reason)),
              ...fact("Agent", accepted?.agentId ?? "?"),
              ...fact("Queue position", String(explanation.queueSequence)),
              ...(progress.settlement === undefined
                ? []
                : fact(
                    "Settlement",
                    `${progress.settlement.outcome} at ${formatTime(progress.settlement.settledAt)}`,
                  )),
            ]),
            h("section", { "aria-labelledby": "actions-title" }, [
              h("h3", { id: "actions-title", text: "Actions" }),
              h(
                "div",
                { class: "actions" },
                buttons.length === 0 ? [h("p", { text: "No action applies now." })] : buttons,
              ),
            ]),
            h("section", { "aria-labelledby": "timeline-title" }, [
              h("h3", { id: "timeline-title", text: "Timeline" }),
              renderTimeline(buildTimeline(records, { namespaceBinding: binding, object }), Date.now()),
            ]),
            h("section", { "aria-labelledby": "raw-title" }, [
              h("h3", { id: "raw-title", text: "Records" }),
              raw,
            ]),
          ],
        ),
      )
    }
    const refresh = async () => {
      const detail = await api("GET", path, { signal })
      // Records too large for one answer come a part at a time (`more`): read on at once, so
      // the view shows all of them, and its state and token are those of the last part.
      let progress = detail.progress
      const records = [...progress.records]
      while (progress.more === true && !signal.aborted) {
        progress = await api("GET", `${path}/progress${query({ after: progress.token, timeoutMillis: 0 })}`, {
          signal,
        })
        records.push(...progress.records)
      }
      const whole = { ...detail, progress: { ...progress, records } }
      // A late answer never draws over the view the page has moved to.
      if (!signal.aborted) draw(whole)
      return whole
    }
    let detail
    try {
      detail = await refresh()
    } catch (error) {
      root.replaceChildren(failure(error))
      return
    }
    void follow(path, detail.progress, refresh, signal)
  }
}

/**
 * Long-polls a Submission's progress and redraws it whenever it moves, until the page leaves
 * it or it settles. A change is drawn by `refresh`, which reads every record (every part of
 * an answer with `more`); the token and state move on only once it has.
 * @param {string} path
 * @param {{ token: string, state: string }} progress
 * @param {() => Promise<any>} refresh
 * @param {AbortSignal} signal
 */
async function follow(path, progress, refresh, signal) {
  let { token, state } = progress
  while (!signal.aborted && state !== "settled") {
    setLive(`live: following this Submission (${state})`)
    try {
      const next = await api(
        "GET",
        `${path}/progress${query({ after: token, timeoutMillis: PROGRESS_WAIT_MILLIS })}`,
        { signal },
      )
      if (next.changed) {
        const detail = await refresh()
        token = detail.progress.token
        state = detail.progress.state
        setLive(`updated ${formatTime(Date.now())}`)
      } else {
        token = next.token
        state = next.state
      }
    } catch (error) {
      if (signal.aborted) return
      setLive(`live updates paused: ${error instanceof ConsoleError ? error.tag : String(error)}`)
      await new Promise((resolve) => setTimeout(resolve, PROGRESS_RETRY_MILLIS))
    }
  }
  if (!signal.aborted) setLive(state === "settled" ? "settled: nothing more will change" : "")
}
