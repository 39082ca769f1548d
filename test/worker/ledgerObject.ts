/**
 * A bare SQLite-backed Durable Object for the ledger and history tests: they reach its storage
 * with `runInDurableObject` and build the SQL layers over it.
 */
import { DurableObject } from "cloudflare:workers"

export class LedgerTestObject extends DurableObject {}
