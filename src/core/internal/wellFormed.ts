/**
 * Well-formed UTF-16: SQLite stores text as UTF-8, where a lone surrogate becomes U+FFFD, so a
 * text stored in a column is read back as sent only if it has none.
 * @internal
 */

/** A high surrogate not followed by a low one, or a low one not preceded by a high one. */
const loneSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

/** Whether `value` has no lone surrogate, so that SQLite stores it as sent. @internal */
export const isWellFormed = (value: string): boolean => !loneSurrogate.test(value)
