/**
 * Remembered decodes of stored values, by their JSON text. Hot paths decode the same stored
 * row or record again and again (a lookup after the write that made it, a record each
 * transaction reads); a schema decode costs tens of microseconds, the text a few. Decoding is a
 * pure function of the stored value, and decoded values are immutable, so a remembered one
 * stands for any value with the same text, as long as the text tells values apart: see
 * `faithfulJson`. Only successful decodes are remembered.
 */

/**
 * The JSON text of a value, or undefined when the text would not tell it apart from another
 * value: only plain objects, arrays, strings, finite numbers, booleans and null round-trip
 * exactly (an undefined member disappears, NaN reads as null, a String object as a string).
 */
export const faithfulJson = (value: unknown): string | undefined =>
  isPlainJson(value) ? JSON.stringify(value) : undefined

const isPlainJson = (value: unknown): boolean => {
  switch (typeof value) {
    case "string":
    case "boolean":
      return true
    case "number":
      return Number.isFinite(value)
    case "object": {
      if (value === null) return true
      if (Array.isArray(value))
        return Object.getPrototypeOf(value) === Array.prototype && value.every(isPlainJson)
      const proto = Object.getPrototypeOf(value)
      if (proto !== Object.prototype && proto !== null) return false
      for (const key in value) if (!isPlainJson((value as Record<string, unknown>)[key])) return false
      return true
    }
    default:
      return false
  }
}

/** A bounded map from JSON text to what it decoded to; the oldest entry goes first. */
export class DecodeMemo<A> {
  readonly #entries = new Map<string, A>()
  constructor(
    /** Entries kept. */
    readonly capacity: number,
    /** Longer texts are not kept: a key costs its length in memory and hashing. */
    readonly maxTextLength: number,
  ) {}

  get(text: string | undefined): A | undefined {
    return text === undefined ? undefined : this.#entries.get(text)
  }

  set(text: string | undefined, decoded: A): void {
    if (text === undefined || text.length > this.maxTextLength) return
    if (this.#entries.size >= this.capacity && !this.#entries.has(text)) {
      this.#entries.delete(this.#entries.keys().next().value!)
    }
    this.#entries.set(text, decoded)
  }
}
