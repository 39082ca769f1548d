// @ts-check
// How the page names an Object: by the name it is reached by (`#/o/<name>`, API `objects/`),
// or by its id when a record only knows that (`#/i/<id>`, API `ids/`: a parent link names
// its parent's Object by id).

/** @typedef {{ by: "name" | "id", key: string }} ObjectRef */

/**
 * A console route of segments, each percent-encoded.
 * @param {Array<string>} segments
 */
export function routeOf(segments) {
  return `/${segments.map(encodeURIComponent).join("/")}`
}

/**
 * The route of an Object's view, or of something in it.
 * @param {ObjectRef} ref
 * @param {Array<string>} [rest]
 */
export function objectRoute(ref, rest = []) {
  return routeOf([ref.by === "name" ? "o" : "i", ref.key, ...rest])
}

/**
 * The API path segments of an Object.
 * @param {ObjectRef} ref
 * @returns {Array<string>}
 */
export function objectApi(ref) {
  return [ref.by === "name" ? "objects" : "ids", ref.key]
}

/**
 * An Object in words.
 * @param {ObjectRef} ref
 */
export function objectLabel(ref) {
  return ref.by === "name" ? `Object ${ref.key}` : `Object id ${ref.key.slice(0, 12)}…`
}
