/**
 * A stable, synchronous content digest: two 64-bit FNV-1a lanes over the UTF-16 code units,
 * rendered as 32 hex characters. Not cryptographic; it names contracts and payloads.
 * @internal
 */
const FNV_PRIME = 0x100000001b3n
const MASK_64 = 0xffffffffffffffffn

const fnv1a = (text: string, seed: bigint): bigint => {
  let hash = seed
  for (let index = 0; index < text.length; index++) {
    hash ^= BigInt(text.charCodeAt(index))
    hash = (hash * FNV_PRIME) & MASK_64
  }
  return hash
}

/** @internal */
export const contentDigest = (text: string): string =>
  fnv1a(text, 0xcbf29ce484222325n).toString(16).padStart(16, "0") +
  fnv1a(text, 0x84222325cbf29ce4n).toString(16).padStart(16, "0")

/** JSON with object keys sorted, so equal values always encode alike. @internal */
export const canonicalJson = (value: unknown): string =>
  JSON.stringify(value, (_key, inner: unknown) =>
    inner !== null && typeof inner === "object" && !Array.isArray(inner)
      ? Object.fromEntries(
          Object.entries(inner as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
        )
      : inner,
  )
