/**
 * A stable, synchronous content digest: two 64-bit FNV-1a lanes over the UTF-16 code units,
 * rendered as 32 hex characters. Not cryptographic; it names contracts and payloads.
 * @internal
 */
const hex32 = (word: number) => word.toString(16).padStart(8, "0")

/**
 * Each lane is a 64-bit hash kept as two 32-bit halves: times the prime 2^40 + 0x1b3, every
 * partial product stays below 2^53, so plain numbers compute it exactly, without BigInt.
 * @internal
 */
export const contentDigest = (text: string): string => {
  let aHigh = 0xcbf29ce4
  let aLow = 0x84222325
  let bHigh = 0x84222325
  let bLow = 0xcbf29ce4
  for (let index = 0; index < text.length; index++) {
    const unit = text.charCodeAt(index)
    // `^` answers a signed 32-bit integer; `>>> 0` reads it back unsigned.
    const a = (aLow ^ unit) >>> 0
    const b = (bLow ^ unit) >>> 0
    aLow = a * 0x1b3
    aHigh = (aHigh * 0x1b3 + a * 0x100 + Math.floor(aLow / 0x100000000)) >>> 0
    aLow >>>= 0
    bLow = b * 0x1b3
    bHigh = (bHigh * 0x1b3 + b * 0x100 + Math.floor(bLow / 0x100000000)) >>> 0
    bLow >>>= 0
  }
  return hex32(aHigh) + hex32(aLow) + hex32(bHigh) + hex32(bLow)
}

/** JSON with object keys sorted, so equal values always encode alike. @internal */
export const canonicalJson = (value: unknown): string =>
  JSON.stringify(value, (_key, inner: unknown) =>
    inner !== null && typeof inner === "object" && !Array.isArray(inner)
      ? Object.fromEntries(
          Object.entries(inner as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
        )
      : inner,
  )
