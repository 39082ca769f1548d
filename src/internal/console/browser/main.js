// @ts-check
// The page's router: the hash names the view (`#/o/<object>/t/<thread>/s/<submission>`), so
// every view has a link, and the browser's back and forward move between them. Leaving a view
// aborts its refreshes and its long poll.
import { api, apiPath, operatorToken, TOKEN_KEY } from "./api.js"
import { byId, h } from "./dom.js"
import { setCrumbs, setLive } from "./frame.js"
import { failure, homeView, objectView, threadView } from "./lists.js"
import { submissionView } from "./submission.js"
import { objectApi, objectLabel, objectRoute, segmentValue } from "./refs.js"

/** @typedef {import("./refs.js").ObjectRef} ObjectRef */

/** @typedef {import("./lists.js").View} View */

let leaving = new AbortController()

/**
 * Finds the Submission a child link names by its idempotency key, and opens it.
 * @param {ObjectRef} object
 * @param {string} threadId
 * @param {string} key
 * @returns {View}
 */
function keyView(object, threadId, key) {
  return async (root, signal) => {
    setCrumbs([
      { label: objectLabel(object), route: objectRoute(object) },
      { label: `Thread ${threadId}`, route: objectRoute(object, ["t", threadId]) },
    ])
    const found = await api("GET", apiPath(...objectApi(object), "threads", threadId, "keys", key), {
      signal,
    })
    if (signal.aborted) return
    if (found === null) {
      root.replaceChildren(
        h("p", {
          text: `No Submission of Thread ${threadId} has the key ${key} yet: the child may not be admitted yet.`,
        }),
      )
      return
    }
    location.replace(`#${objectRoute(object, ["t", threadId, "s", found.submissionId])}`)
  }
}

/**
 * The view a hash names.
 * @param {string} hash
 * @returns {{ name: string, view: View }}
 */
function viewOf(hash) {
  const [path = "", search = ""] = hash.replace(/^#/, "").split("?")
  /** @type {Array<string>} */
  let segments
  try {
    segments = path
      .split("/")
      .filter((segment) => segment !== "")
      .map(segmentValue)
  } catch {
    segments = []
  }
  const [by, key = "", t, thread = "", kind, id = ""] = segments
  if ((by === "o" || by === "i") && key !== "") {
    /** @type {ObjectRef} */
    const object = { by: by === "o" ? "name" : "id", key }
    if (t === undefined) return { name: "object", view: objectView(object) }
    if (t === "t" && thread !== "") {
      if (kind === undefined)
        return { name: "thread", view: threadView(object, thread, new URLSearchParams(search)) }
      if (kind === "s" && id !== "") return { name: "submission", view: submissionView(object, thread, id) }
      if (kind === "k" && id !== "") return { name: "key", view: keyView(object, thread, id) }
    }
  }
  return { name: "home", view: homeView }
}

async function render() {
  leaving.abort()
  leaving = new AbortController()
  const signal = leaving.signal
  const root = byId("view")
  const { name, view } = viewOf(location.hash)
  document.body.dataset["view"] = name
  root.replaceChildren(h("p", { text: "Loading…" }))
  setLive("")
  try {
    await view(root, signal)
  } catch (error) {
    if (!signal.aborted) root.replaceChildren(failure(error))
  }
}

function start() {
  const token = /** @type {HTMLInputElement} */ (byId("token"))
  token.value = operatorToken()
  token.addEventListener("input", () => sessionStorage.setItem(TOKEN_KEY, token.value))
  window.addEventListener("hashchange", () => {
    byId("notice").textContent = ""
    void render()
    byId("view").focus({ preventScroll: true })
  })
  void render()
}

start()
