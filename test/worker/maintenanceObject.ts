/**
 * A bare SQLite-backed Durable Object for the in-process suites: a test body runs inside it
 * with `runInDurableObject` and builds incarnations over its state (`test/support/incarnation.ts`).
 */
import { DurableObject } from "cloudflare:workers"

export class MaintenanceTestObject extends DurableObject {}
