// @ts-check
// The list views: the Objects, one Object's Threads with their counts beside its obligations
// and `verify`, and one Thread's Submissions filtered and paged by the server.
import { actionButtons, actionCatalogue, takeAction } from "./actions.js"
import { api, apiPath, ConsoleError, query } from "./api.js"
import { renderObligations } from "./axis.js"
import { byId, formatTime, h, link, shortId, table } from "./dom.js"
import { navigate, setCrumbs } from "./frame.js"
import { objectApi, objectLabel, objectRoute } from "./refs.js"

/** @typedef {import("./refs.js").ObjectRef} ObjectRef */

/** How often an open list refreshes itself. */
const LIST_REFRESH_MILLIS = 5_000

/** How many empty windows one click of a filtered list reads through. */
const EMPTY_WINDOWS = 25

const SUBMISSION_STATES = [
  "admitted",
  "ready",
  "joining",
  "joined",
  "running",
  "waiting",
  "suspended",
  "unknown",
  "terminalizing",
  "settled",
]
const WAITING_KINDS = [
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
  "settling",
  "settled",
]

/**
 * A view: draws into `root`, and returns what stops its timers and requests when the page
 * leaves it.
 * @typedef {(root: HTMLElement, signal: AbortSignal) => Promise<void>} View
 */

/**
 * Runs `draw` now and every `intervalMillis` until `signal` aborts.
 * @param {AbortSignal} signal
 * @param {number} intervalMillis
 * @param {() => Promise<void>} draw
 */
export async function keepFresh(signal, intervalMillis, draw) {
  await draw()
  if (signal.aborted) return
  const timer = setInterval(() => {
    if (!signal.aborted) draw().catch(() => undefined)
  }, intervalMillis)
  signal.addEventListener("abort", () => clearInterval(timer))
}

/**
 * Shows a failed read in place of what it would have drawn.
 * @param {unknown} error
 */
export function failure(error) {
  const text = error instanceof ConsoleError ? `${error.tag}: ${error.message}` : String(error)
  return h("p", { class: "bad", "data-error": error instanceof ConsoleError ? error.tag : "Error", text })
}

/** The front page reads the counts of this many listed Objects (one small read each). */
const COUNTED_OBJECTS = 50

/** @type {View} */
export async function homeView(root, signal) {
  setCrumbs([])
  const input = h("input", {
    id: "open-object",
    name: "object",
    type: "text",
    required: true,
    autocomplete: "off",
  })
  const form = h("form", { class: "inline" }, [
    h("label", { for: "open-object", text: "Object name" }),
    input,
    h("button", { type: "submit", text: "Open" }),
  ])
  form.addEventListener("submit", (event) => {
    event.preventDefault()
    navigate(objectRoute({ by: "name", key: /** @type {HTMLInputElement} */ (input).value }))
  })
  const list = h("ul", { id: "objects", class: "objects" })
  root.replaceChildren(
    h("section", { "aria-labelledby": "objects-title" }, [
      h("h2", { id: "objects-title", text: "Objects" }),
      list,
    ]),
    h("section", { "aria-labelledby": "open-title" }, [
      h("h2", { id: "open-title", text: "Open an Object" }),
      form,
    ]),
  )
  try {
    const { objects } = await api("GET", "objects")
    list.replaceChildren(
      ...(objects.length === 0
        ? [h("li", { text: "This console lists no Objects: open one by name." })]
        : objects.map((/** @type {string} */ name, /** @type {number} */ index) => {
            const count = h("span", { class: "count-note" })
            if (index < COUNTED_OBJECTS) void countUnsettled(name, count, signal)
            return h("li", { "data-object": name }, [
              link(objectRoute({ by: "name", key: name }), name),
              count,
            ])
          })),
    )
  } catch (error) {
    list.replaceChildren(h("li", {}, [failure(error)]))
  }
}

/**
 * Shows how many unsettled Submissions an Object holds (its first Threads page, one Thread long).
 * @param {string} name
 * @param {HTMLElement} into
 * @param {AbortSignal} signal
 */
async function countUnsettled(name, into, signal) {
  try {
    const page = await api(
      "GET",
      `${apiPath(...objectApi({ by: "name", key: name }))}${query({ limit: 1 })}`,
      {
        signal,
      },
    )
    into.textContent = ` · ${page.unsettled} unsettled`
  } catch (error) {
    into.textContent = ` · ${error instanceof ConsoleError ? error.tag : "unreadable"}`
  }
}

/**
 * @param {ObjectRef} object
 * @returns {View}
 */
export function objectView(object) {
  return async (root, signal) => {
    setCrumbs([{ label: objectLabel(object) }])
    /** @type {Array<string | undefined>} */
    const pages = [undefined]
    const threads = h("div", { id: "threads" })
    const obligations = h("div", { id: "obligations" })
    const verify = h("div", { id: "verify" })
    const actions = h("div", { class: "actions", id: "object-actions" })
    const runVerify = h("button", { type: "button", id: "run-verify", text: "Run verify" })
    runVerify.addEventListener("click", async () => {
      verify.replaceChildren(h("p", { text: "Verifying…" }))
      try {
        verify.replaceChildren(renderVerify(await api("GET", apiPath(...objectApi(object), "verify"))))
      } catch (error) {
        verify.replaceChildren(failure(error))
      }
    })
    root.replaceChildren(
      h("h2", {}, [
        "Object ",
        h("span", { class: "name", text: object.by === "name" ? object.key : `id ${object.key}` }),
      ]),
      h("section", { "aria-labelledby": "threads-title" }, [
        h("h3", { id: "threads-title", text: "Threads" }),
        threads,
      ]),
      h("section", { "aria-labelledby": "owed-title" }, [
        h("h3", { id: "owed-title", text: "Alarm and obligations" }),
        obligations,
      ]),
      h("section", { "aria-labelledby": "verify-title" }, [
        h("h3", { id: "verify-title", text: "Verify" }),
        runVerify,
        verify,
      ]),
      h("section", { "aria-labelledby": "object-actions-title" }, [
        h("h3", { id: "object-actions-title", text: "Object actions" }),
        actions,
      ]),
    )
    const catalogueOf = await actionCatalogue()
    const refresh = () => drawObject()
    actions.replaceChildren(
      ...actionButtons(catalogueOf, "object", "", (action) =>
        takeAction(action, apiPath(...objectApi(object), "actions", action.id), objectLabel(object), refresh),
      ),
    )
    const drawObject = async () => {
      const after = pages.at(-1)
      try {
        const page = await api("GET", `${apiPath(...objectApi(object))}${query({ after, limit: 50 })}`, {
          signal,
        })
        if (!signal.aborted) threads.replaceChildren(renderThreads(object, page, pages, drawObject))
      } catch (error) {
        if (!signal.aborted) threads.replaceChildren(failure(error))
      }
      try {
        obligations.replaceChildren(
          renderObligations(await api("GET", apiPath(...objectApi(object), "obligations"), { signal })),
        )
      } catch (error) {
        if (!signal.aborted) obligations.replaceChildren(failure(error))
      }
    }
    await keepFresh(signal, LIST_REFRESH_MILLIS, drawObject)
  }
}

/**
 * The completions the Object keeps for workflow executions not yet started (the first page's
 * `early`), against its bounds: a full Object refuses the next one.
 * @param {{ events: number, bytes: number, maxEvents: number, maxBytes: number, keys: Array<any> }} early
 */
function renderEarly(early) {
  const rows = early.keys.map((key) =>
    h("tr", { "data-early-key": key.idempotencyKey }, [
      h("td", { text: key.threadId }),
      h("td", { text: key.idempotencyKey }),
      h("td", { text: key.agentId }),
      h("td", { class: "count", text: String(key.events) }),
      h("td", { class: "count", text: String(key.bytes) }),
      h("td", { text: formatTime(key.firstKeptAt) }),
      h("td", {}, [shortId(key.submissionId, 12)]),
    ]),
  )
  return h("div", { id: "early", "data-events": early.events }, [
    h("p", {
      text: `${early.events} of ${early.maxEvents} completion(s), ${early.bytes} of ${early.maxBytes} bytes, kept for executions not yet started (forget the submission id to remove them).`,
    }),
    table(
      "Completions kept before their execution starts",
      ["Thread", "execution id", "agent", "completions", "bytes", "first kept", "submission id"],
      rows,
    ),
  ])
}

/**
 * @param {ObjectRef} object
 * @param {{ threads: Array<any>, next?: string, unsettled: number, early?: any }} page
 * @param {Array<string | undefined>} pages  the `after` of each page shown so far
 * @param {() => Promise<void>} redraw
 */
function renderThreads(object, page, pages, redraw) {
  const rows = page.threads.map((thread) =>
    h("tr", { "data-thread": thread.threadId }, [
      h("td", {}, [link(objectRoute(object, ["t", thread.threadId]), thread.threadId)]),
      h("td", {
        text: thread.head === undefined ? "—" : `${thread.head.submission.state} (${thread.head.waiting})`,
      }),
      h("td", { class: "count", text: `${thread.open}${thread.capped ? "+" : ""}` }),
      h("td", { class: "count", text: String(thread.parked) }),
      h("td", { class: "count", text: `${thread.capped ? "≤ " : ""}${thread.settled}` }),
      h("td", { class: "count", text: String(thread.admitted) }),
    ]),
  )
  const pager = h("div", { class: "pager" })
  if (pages.length > 1) pager.append(pagerButton("First page", () => pages.splice(1), redraw))
  if (page.next !== undefined) pager.append(pagerButton("Next page", () => pages.push(page.next), redraw))
  return h("div", {}, [
    h("p", { text: `${page.unsettled} unsettled Submission(s) in this Object.` }),
    table("Threads of this Object", ["Thread", "head", "open", "parked", "settled", "admitted"], rows),
    pager,
    page.early === undefined ? undefined : renderEarly(page.early),
  ])
}

/**
 * A pager button that changes the page list and redraws the list.
 * @param {string} label
 * @param {() => void} move
 * @param {() => Promise<void>} redraw
 */
function pagerButton(label, move, redraw) {
  const button = h("button", { type: "button", text: label, "data-pager": label })
  button.addEventListener("click", () => {
    move()
    redraw().catch(() => undefined)
  })
  return button
}

/** @param {{ violations: Array<any>, submissions: number, historyRecords: number }} report */
function renderVerify(report) {
  return h("div", { "data-violations": report.violations.length }, [
    h("p", {
      class: report.violations.length === 0 ? "ok" : "bad",
      text:
        report.violations.length === 0
          ? `no violations (${report.submissions} submissions, ${report.historyRecords} records)`
          : `${report.violations.length} violation(s)`,
    }),
    h(
      "ul",
      {},
      report.violations.map((violation) =>
        h("li", { class: "bad", text: `${violation.invariant}: ${violation.message}` }),
      ),
    ),
  ])
}

/**
 * A labelled select of `options` ("any" first).
 * @param {string} id
 * @param {string} label
 * @param {Array<string>} options
 * @param {string} value
 */
function select(id, label, options, value) {
  const control = /** @type {HTMLSelectElement} */ (
    h("select", { id, name: id }, [
      h("option", { value: "", text: "any" }),
      ...options.map((option) => h("option", { value: option, text: option })),
    ])
  )
  control.value = value
  return h("div", { class: "field" }, [h("label", { for: id, text: label }), control])
}

/**
 * @param {ObjectRef} object
 * @param {string} threadId
 * @param {URLSearchParams} filters
 * @returns {View}
 */
export function threadView(object, threadId, filters) {
  return async (root, signal) => {
    setCrumbs([{ label: objectLabel(object), route: objectRoute(object) }, { label: `Thread ${threadId}` }])
    const here = objectRoute(object, ["t", threadId])
    const form = h("form", { class: "filters", id: "filters" }, [
      select("filter-state", "State", SUBMISSION_STATES, filters.get("state") ?? ""),
      h("div", { class: "field" }, [
        h("label", { for: "filter-agent", text: "Agent" }),
        h("input", {
          id: "filter-agent",
          name: "agent",
          type: "text",
          value: filters.get("agent") ?? "",
          autocomplete: "off",
        }),
      ]),
      select("filter-waiting", "Why it waits", WAITING_KINDS, filters.get("waiting") ?? ""),
      h("button", { type: "submit", text: "Apply filters" }),
    ])
    form.addEventListener("submit", (event) => {
      event.preventDefault()
      const value = (/** @type {string} */ name) => /** @type {HTMLInputElement} */ (byId(name)).value
      navigate(
        `${here}${query({ state: value("filter-state"), agent: value("filter-agent"), waiting: value("filter-waiting") })}`,
      )
    })
    const list = h("div", { id: "submissions" })
    root.replaceChildren(
      h("h2", {}, ["Thread ", h("span", { class: "name", text: threadId })]),
      h("section", { "aria-labelledby": "filters-title" }, [
        h("h3", { id: "filters-title", text: "Filters" }),
        form,
      ]),
      h("section", { "aria-labelledby": "submissions-title" }, [
        h("h3", { id: "submissions-title", text: "Submissions" }),
        list,
      ]),
    )
    /** @type {Array<number | undefined>} */
    const pages = [undefined]
    /** @param {number | undefined} cursor */
    const read = (cursor) =>
      api(
        "GET",
        `${apiPath(...objectApi(object), "threads", threadId, "submissions")}${query({
          state: filters.get("state") ?? undefined,
          agent: filters.get("agent") ?? undefined,
          waiting: filters.get("waiting") ?? undefined,
          cursor,
          limit: 50,
        })}`,
        { signal },
      )
    const draw = async () => {
      try {
        let page = await read(pages.at(-1))
        // Each answer reads one window of the Thread: a sparse filter goes on through empty
        // windows, a bounded number per click. A later page stays where they led; the first
        // one reads from the top again at each refresh, so it shows new Submissions.
        for (
          let hop = 0;
          page.submissions.length === 0 && page.next !== undefined && hop < EMPTY_WINDOWS;
          hop++
        ) {
          if (pages.length > 1) pages[pages.length - 1] = page.next
          page = await read(page.next)
        }
        if (signal.aborted) return
        list.replaceChildren(renderSubmissions(object, threadId, page, pages, draw))
      } catch (error) {
        if (!signal.aborted) list.replaceChildren(failure(error))
      }
    }
    // The first page follows new Submissions; a later page stays where it is.
    await keepFresh(signal, LIST_REFRESH_MILLIS, () => (pages.length === 1 ? draw() : Promise.resolve()))
  }
}

/**
 * @param {ObjectRef} object
 * @param {string} threadId
 * @param {{ submissions: Array<{ submission: any, waiting: string }>, next?: number, order: string }} page
 * @param {Array<number | undefined>} pages
 * @param {() => Promise<void>} redraw
 */
function renderSubmissions(object, threadId, page, pages, redraw) {
  const rows = page.submissions.map(({ submission, waiting }) =>
    h(
      "tr",
      { "data-state": submission.state, "data-waiting": waiting, "data-submission": submission.submissionId },
      [
        h("td", { class: "count", text: String(submission.queueSequence) }),
        h("td", {}, [
          link(
            objectRoute(object, ["t", threadId, "s", submission.submissionId]),
            shortId(submission.submissionId, 12),
          ),
        ]),
        h("td", { text: submission.state }),
        h("td", { text: waiting }),
        h("td", { text: submission.agentId }),
        h("td", { text: formatTime(submission.createdAt) }),
        h("td", { text: submission.settlement === undefined ? "" : submission.settlement.outcome }),
      ],
    ),
  )
  const pager = h("div", { class: "pager" })
  if (pages.length > 1) pager.append(pagerButton("First page", () => pages.splice(1), redraw))
  if (page.next !== undefined) pager.append(pagerButton("Next page", () => pages.push(page.next), redraw))
  const order = page.order === "queue" ? "queue order, the head first" : "newest first"
  return h("div", { "data-page": pages.length, "data-rows": page.submissions.length }, [
    h("p", {
      class: "page-info",
      text: `Page ${pages.length}, ${page.submissions.length} shown, ${order}${page.next === undefined ? ", the last page" : ""}.`,
    }),
    table(
      `Submissions of Thread ${threadId}`,
      ["#", "submission", "state", "why", "agent", "created", "outcome"],
      rows,
    ),
    pager,
  ])
}
