/**
 * The bench subjects, one table column each: a Durable Object class exported by
 * bench/worker/index.ts, the binding it gets, and the driver that measures it. A new subject
 * (the library's own Object, say) is one more entry here plus its class export in the Worker.
 */
import { alarmLoopDriver, burstDriver, type Driver } from "./drivers.ts"

/** What the run needs to know to set up and measure a subject. */
export interface BenchSettings {
  readonly burst: number
  readonly warmup: number
  readonly loopMs: number
}

/** One column of the table. */
export interface Subject {
  readonly id: string
  readonly label: string
  readonly binding: string
  readonly className: string
  /** The measured driver, and a short one run once first so no figure pays for a cold start. */
  readonly drivers: (settings: BenchSettings) => { readonly warmup: Driver; readonly measure: Driver }
}

export const subjects: ReadonlyArray<Subject> = [
  {
    id: "baseline",
    label: "baseline (raw SQL queue)",
    binding: "BASELINE",
    className: "BaselineObject",
    drivers: ({ burst, warmup }) => ({ warmup: burstDriver(warmup), measure: burstDriver(burst) }),
  },
  {
    id: "alarmLoop",
    label: "raw alarm loop",
    binding: "ALARM_LOOP",
    className: "AlarmLoopObject",
    drivers: ({ loopMs }) => ({ warmup: alarmLoopDriver(200), measure: alarmLoopDriver(loopMs) }),
  },
]
