// @ts-check
// How the page names an Object: by the name it is reached by (`#/o/<name>`, API `objects/`),
// or by its id when a record only knows that (`#/i/<id>`, API `ids/`: a parent link names
// its parent's Object by id).

/** @typedef {{ by: "name" | "id", key: string }} ObjectRef */

/**
 * One path segment of a route or an API path: the value percent-encoded, and `.` or `..` (which
 * a URL parser removes, `%2E%2E` too) written `$.` or `$..` (a `$` of a value is `%24`). The
 * Worker reads API paths with the same rule (`segmentValue` in `routes.ts`).
 * @param {string} value
 */
export function pathSegment(value) {
  return value === "." || value === ".." ? `$${value}` : encodeURIComponent(value)
}

/**
 * The value of a path segment `pathSegment` wrote; throws when it is not valid percent-encoding.
 * @param {string} segment
 */
export function segmentValue(segment) {
  return segment === "$." || segment === "$.." ? segment.slice(1) : decodeURIComponent(segment)
}

/**
 * A console route of segments, each written by `pathSegment`.
 * @param {Array<string>} segments
 */
export function routeOf(segments) {
  return `/${segments.map(pathSegment).join("/")}`
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
