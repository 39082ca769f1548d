/**
 * A bare SQLite-backed Durable Object with a no-op alarm handler, for the bench meter tests:
 * they wrap its state with `meterState` inside `runInDurableObject` (workerd refuses `setAlarm`
 * on a class without `alarm()`).
 */
import { DurableObject } from "cloudflare:workers"

export class BenchTestObject extends DurableObject {
  override async alarm(): Promise<void> {}
}
