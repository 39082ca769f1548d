/**
 * A row limit written into a statement's text instead of bound as `LIMIT ?`.
 *
 * SQLite plans a statement around the value bound to its `LIMIT`, so it marks that parameter:
 * binding it again expires the prepared statement, and workerd, which binds every parameter at
 * every run, then has SQLite prepare the statement again each time (measured in workerd: a
 * keyset page with `LIMIT ?` cost 2.8 times its literal form, half of it in re-preparing). A
 * literal keeps one prepared statement per limit. The library's own limits are a few constants; a
 * caller's page size adds one statement per distinct value to workerd's statement cache, which
 * keeps the most recently used ones up to a bound (1 MiB of SQL text in its source).
 *
 * The text is the number as JavaScript writes it, so SQLite judges it as it judges a bound
 * number: a negative limit is no limit, a fraction is refused as a datatype mismatch. A value
 * that is not finite becomes `NULL`, refused the same way.
 * @internal
 */
export const rowLimit = (rows: number): string => (Number.isFinite(rows) ? String(rows) : "NULL")
