/**
 * What one SQLite row of a Durable Object holds, and so the largest value a record or a
 * Submission's row can carry: a record over it fails every transaction that writes it.
 * `CloudflareConfig` checks the same bound (its own constants: a public module imports nothing
 * from `internal/`); `test/user/childLimits.test.ts` checks that they agree.
 */

/** The largest row (string or BLOB) Cloudflare's SQLite stores. @internal */
export const MAX_ROW_BYTES = 2_000_000

/** What a Submission's row holds besides its input and its output (ids, state, envelopes). @internal */
export const ROW_OVERHEAD_BYTES = 65_536

/**
 * The most input any Thread admits: `limits.maxInputBytes` plus `maxStoredValueBytes` is at most
 * this, so a larger input is refused everywhere. @internal
 */
export const MAX_INPUT_BYTES_CEILING = MAX_ROW_BYTES - ROW_OVERHEAD_BYTES
