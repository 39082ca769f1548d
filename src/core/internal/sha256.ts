/**
 * SHA-256 of a string's UTF-8 bytes, synchronously: admission derives Submission ids inside a
 * storage transaction, where awaiting `crypto.subtle` is not allowed. FIPS 180-4.
 * @internal
 */
const K = new Uint32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98,
  0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
  0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8,
  0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
  0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819,
  0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
  0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
  0xc67178f2,
])

const rotr = (x: number, n: number) => (x >>> n) | (x << (32 - n))

const encoder = new TextEncoder()
// Scratch space reused by every call (the function never yields): the message schedule, and
// the padded message, grown when a longer text needs it. Ids are digested on every admission.
const w = new Uint32Array(64)
let scratch = new Uint8Array(256)
const HEX = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, "0"))

const hexWord = (word: number) =>
  HEX[word >>> 24]! + HEX[(word >>> 16) & 0xff]! + HEX[(word >>> 8) & 0xff]! + HEX[word & 0xff]!

/** The digest as 64 lowercase hex digits. @internal */
export const sha256Hex = (text: string): string => {
  // UTF-8 takes at most 3 bytes per UTF-16 unit; padding adds at most 72.
  if (scratch.length < text.length * 3 + 72) scratch = new Uint8Array(text.length * 3 + 136)
  const bytes = scratch
  const length = encoder.encodeInto(text, bytes).written
  // Message, the 0x80 marker, zero padding, and the 64-bit bit length: a multiple of 64 bytes.
  const padded = Math.ceil((length + 9) / 64) * 64
  bytes.fill(0, length, padded)
  bytes[length] = 0x80
  const high = Math.floor(length / 0x20000000)
  const low = (length * 8) >>> 0
  for (let i = 0; i < 4; i++) {
    bytes[padded - 8 + i] = (high >>> (24 - 8 * i)) & 0xff
    bytes[padded - 4 + i] = (low >>> (24 - 8 * i)) & 0xff
  }
  let h0 = 0x6a09e667
  let h1 = 0xbb67ae85
  let h2 = 0x3c6ef372
  let h3 = 0xa54ff53a
  let h4 = 0x510e527f
  let h5 = 0x9b05688c
  let h6 = 0x1f83d9ab
  let h7 = 0x5be0cd19
  for (let block = 0; block < padded; block += 64) {
    for (let i = 0; i < 16; i++) {
      const at = block + i * 4
      w[i] = (bytes[at]! << 24) | (bytes[at + 1]! << 16) | (bytes[at + 2]! << 8) | bytes[at + 3]!
    }
    for (let i = 16; i < 64; i++) {
      const a = w[i - 15]!
      const b = w[i - 2]!
      const s0 = rotr(a, 7) ^ rotr(a, 18) ^ (a >>> 3)
      const s1 = rotr(b, 17) ^ rotr(b, 19) ^ (b >>> 10)
      w[i] = (w[i - 16]! + s0 + w[i - 7]! + s1) >>> 0
    }
    let a = h0
    let b = h1
    let c = h2
    let d = h3
    let e = h4
    let f = h5
    let g = h6
    let k = h7
    for (let i = 0; i < 64; i++) {
      const t1 = (k + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + K[i]! + w[i]!) >>> 0
      const t2 = ((rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c))) >>> 0
      k = g
      g = f
      f = e
      e = (d + t1) >>> 0
      d = c
      c = b
      b = a
      a = (t1 + t2) >>> 0
    }
    h0 = (h0 + a) >>> 0
    h1 = (h1 + b) >>> 0
    h2 = (h2 + c) >>> 0
    h3 = (h3 + d) >>> 0
    h4 = (h4 + e) >>> 0
    h5 = (h5 + f) >>> 0
    h6 = (h6 + g) >>> 0
    h7 = (h7 + k) >>> 0
  }
  return (
    hexWord(h0) +
    hexWord(h1) +
    hexWord(h2) +
    hexWord(h3) +
    hexWord(h4) +
    hexWord(h5) +
    hexWord(h6) +
    hexWord(h7)
  )
}
