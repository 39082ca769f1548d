/**
 * The bench protocol for a burst subject: a Durable Object that takes `count` one-step jobs in
 * one request and reports when all are done. `burstRoutes` answers `POST /burst {count}` (reset
 * the meter, submit) and `POST /wait` (resolve once every item is done, with the meter's counts),
 * so any Object, the library's own included, becomes a bench subject by implementing `submit`.
 */
import type { StorageMeter } from "./meter.ts"
import type { BurstReport } from "./report.ts"

/** What a burst subject provides to the routes. */
export interface BurstSubject {
  readonly meter: StorageMeter
  readonly progress: BurstProgress
  /** Accepts `count` jobs; each must call `progress.itemDone()` once when finished. */
  readonly submit: (count: number) => Promise<void>
}

/** Counts finished items of the current burst and wakes waiters when all are done. */
export class BurstProgress {
  #target = 0
  #done = 0
  #waiters: Array<() => void> = []

  begin(target: number): void {
    this.#target = target
    this.#done = 0
  }

  itemDone(): void {
    this.#done += 1
    if (this.#done >= this.#target) for (const wake of this.#waiters.splice(0)) wake()
  }

  get done(): number {
    return this.#done
  }

  settled(): Promise<void> {
    return this.#done >= this.#target
      ? Promise.resolve()
      : new Promise((resolve) => this.#waiters.push(resolve))
  }
}

/** A JSON response. */
export const json = (body: unknown, status = 200): Response =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } })

/** Answers the burst protocol for `subject`; `undefined` for any other path. */
export const burstRoutes = async (request: Request, subject: BurstSubject): Promise<Response | undefined> => {
  const { pathname } = new URL(request.url)
  if (pathname === "/burst") {
    const { count } = await request.json<{ count: number }>()
    if (!Number.isInteger(count) || count < 1) return json({ error: `count must be a positive integer` }, 400)
    subject.meter.reset()
    subject.progress.begin(count)
    await subject.submit(count)
    return json({ submitted: count })
  }
  if (pathname === "/wait") {
    await subject.progress.settled()
    const report: BurstReport = { items: subject.progress.done, counts: subject.meter.snapshot() }
    return json(report)
  }
  return undefined
}
