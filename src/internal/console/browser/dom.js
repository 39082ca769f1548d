// @ts-check
// DOM helpers of the console page. Every value is set with textContent or a property, never
// parsed as HTML: a stored value can only ever show as text.

/**
 * An element with its properties (`class`, `text`, `href`, any other attribute) and children.
 * @param {string} tag
 * @param {Record<string, string | number | boolean | undefined>} [props]
 * @param {Array<Node | string | undefined | false>} [children]
 * @returns {HTMLElement}
 */
export function h(tag, props = {}, children = []) {
  const node = document.createElement(tag)
  for (const [name, value] of Object.entries(props)) {
    if (value === undefined || value === false) continue
    if (name === "text") node.textContent = String(value)
    else if (name === "class") node.className = String(value)
    else node.setAttribute(name, value === true ? "" : String(value))
  }
  for (const child of children) {
    if (child === undefined || child === false) continue
    node.append(typeof child === "string" ? document.createTextNode(child) : child)
  }
  return node
}

/**
 * The element with `id`, which the page must have.
 * @param {string} id
 * @returns {HTMLElement}
 */
export function byId(id) {
  const node = document.getElementById(id)
  if (node === null) throw new Error(`the page has no #${id}`)
  return node
}

/**
 * An instant as local date and time to the second.
 * @param {number | null | undefined} ms
 */
export function formatTime(ms) {
  if (ms === null || ms === undefined) return "none"
  const date = new Date(ms)
  const pad = (/** @type {number} */ n, width = 2) => String(n).padStart(width, "0")
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}.${pad(date.getMilliseconds(), 3)}`
}

/**
 * A duration in the largest units that matter: "420 ms", "3.2 s", "4 min 12 s", "2 h 5 min".
 * @param {number} ms
 */
export function formatDuration(ms) {
  const value = Math.max(0, ms)
  if (value < 1_000) return `${Math.round(value)} ms`
  if (value < 60_000) return `${(value / 1_000).toFixed(1)} s`
  if (value < 3_600_000) return `${Math.floor(value / 60_000)} min ${Math.round((value % 60_000) / 1_000)} s`
  return `${Math.floor(value / 3_600_000)} h ${Math.round((value % 3_600_000) / 60_000)} min`
}

/**
 * A value as compact JSON, cut to `max` characters.
 * @param {unknown} value
 * @param {number} [max]
 */
export function summary(value, max = 160) {
  const text = value === undefined ? "" : JSON.stringify(value)
  return text.length > max ? `${text.slice(0, max - 1)}…` : text
}

/**
 * The first `length` characters of an id, the whole of it in the element's title.
 * @param {string} id
 * @param {number} [length]
 */
export function shortId(id, length = 10) {
  return h("span", { class: "id", title: id, text: id.length > length ? `${id.slice(0, length)}…` : id })
}

/**
 * A hash link inside the console.
 * @param {string} route
 * @param {string | Node} label
 */
export function link(route, label) {
  return h("a", { href: `#${route}` }, [label])
}

/**
 * A table with a caption, a header row and body rows, scrolling sideways when narrow.
 * @param {string} caption
 * @param {Array<string>} headings
 * @param {Array<HTMLElement>} rows
 */
export function table(caption, headings, rows) {
  return h("div", { class: "table-scroll" }, [
    h("table", {}, [
      h("caption", { text: caption }),
      h("thead", {}, [
        h(
          "tr",
          {},
          headings.map((heading) => h("th", { scope: "col", text: heading })),
        ),
      ]),
      h("tbody", {}, rows),
    ]),
  ])
}
