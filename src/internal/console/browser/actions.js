// @ts-check
// The actions: the list the console serves says what each one is, when it applies and what it
// asks for; each asks for confirmation in a dialog and reports its answer, or the typed error
// that refused it, in the page's alert region.
import { api, ConsoleError } from "./api.js"
import { byId, h } from "./dom.js"

/**
 * @typedef {object} ActionEntry
 * @property {string} id
 * @property {string} label
 * @property {"submission" | "object"} scope
 * @property {Array<string>} when
 * @property {string} confirm
 * @property {Array<{ name: string, label: string, kind: "text" | "json", required: boolean }>} fields
 * @property {boolean} available
 */

/** @type {Promise<Array<ActionEntry>> | undefined} */
let catalogue

export function actionCatalogue() {
  catalogue ??= api("GET", "actions").then((body) => /** @type {Array<ActionEntry>} */ (body.actions))
  return catalogue
}

/**
 * Shows a message in the alert region: what an action did, or why it was refused.
 * @param {string} text
 * @param {"ok" | "bad"} tone
 * @param {string} [errorTag]
 */
export function notify(text, tone, errorTag) {
  const notice = byId("notice")
  notice.className = tone
  notice.textContent = text
  if (errorTag === undefined) delete notice.dataset["error"]
  else notice.dataset["error"] = errorTag
}

/**
 * Asks for confirmation and the action's fields; resolves to the fields, or undefined when
 * cancelled.
 * @param {ActionEntry} action
 * @param {string} subject
 * @returns {Promise<Record<string, string> | undefined>}
 */
function confirmAction(action, subject) {
  const dialog = /** @type {HTMLDialogElement} */ (byId("confirm"))
  const form = /** @type {HTMLFormElement} */ (byId("confirm-form"))
  byId("confirm-title").textContent = `${action.label}?`
  byId("confirm-text").textContent = `${action.confirm} (${subject})`
  const fields = byId("confirm-fields")
  fields.replaceChildren(
    ...action.fields.map((field) => {
      const id = `field-${field.name}`
      const input =
        field.kind === "json"
          ? h("textarea", { id, name: field.name, rows: 3, spellcheck: "false", required: field.required })
          : h("input", { id, name: field.name, type: "text", required: field.required })
      return h("div", { class: "field" }, [h("label", { for: id, text: field.label }), input])
    }),
  )
  byId("confirm-ok").textContent = action.label
  return new Promise((resolve) => {
    /** @param {Record<string, string> | undefined} value */
    const finish = (value) => {
      form.removeEventListener("submit", onSubmit)
      byId("confirm-cancel").removeEventListener("click", onCancel)
      dialog.removeEventListener("cancel", onCancel)
      if (dialog.open) dialog.close()
      resolve(value)
    }
    /** @param {Event} event */
    const onSubmit = (event) => {
      event.preventDefault()
      /** @type {Record<string, string>} */
      const values = {}
      for (const field of action.fields) {
        const input = /** @type {HTMLInputElement | null} */ (form.elements.namedItem(field.name))
        values[field.name] = input?.value ?? ""
      }
      finish(values)
    }
    /** @param {Event} event */
    const onCancel = (event) => {
      event.preventDefault()
      finish(undefined)
    }
    form.addEventListener("submit", onSubmit)
    byId("confirm-cancel").addEventListener("click", onCancel)
    dialog.addEventListener("cancel", onCancel)
    dialog.showModal()
  })
}

/**
 * Confirms and takes an action; reports the answer and calls `after` either way.
 * @param {ActionEntry} action
 * @param {string} path  the API path of the action
 * @param {string} subject  what it acts on, in words
 * @param {() => void} after
 * @param {Record<string, string>} [context]  fields the page adds (the step a decision answers)
 */
export async function takeAction(action, path, subject, after, context = {}) {
  const fields = await confirmAction(action, subject)
  if (fields === undefined) return
  try {
    await api("POST", path, { body: { fields: { ...context, ...fields } } })
    notify(`${action.label}: done`, "ok")
  } catch (error) {
    if (error instanceof ConsoleError)
      notify(`${action.label} refused: ${error.tag}: ${error.message}`, "bad", error.tag)
    else notify(`${action.label} failed: ${String(error)}`, "bad", "NetworkError")
  }
  after()
}

/**
 * The buttons of the actions of `scope` that apply to `kind` (every object action).
 * @param {Array<ActionEntry>} actions
 * @param {"submission" | "object"} scope
 * @param {string} kind
 * @param {(action: ActionEntry) => void} onAct
 */
export function actionButtons(actions, scope, kind, onAct) {
  return actions
    .filter((action) => action.scope === scope && (scope === "object" || action.when.includes(kind)))
    .map((action) => {
      const button = h("button", {
        type: "button",
        "data-action": action.id,
        class: action.available ? "" : "unavailable",
        text: action.available ? action.label : `${action.label} (not in this release)`,
      })
      button.addEventListener("click", () => onAct(action))
      return button
    })
}
