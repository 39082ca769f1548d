/**
 * The latency measurement: sequential one-step Submissions, each timed in Node from the request
 * that submits to the answer that reports it settled, on a raw Durable Object and on the
 * library's Object side by side. The subjects alternate sample by sample (raw, library, raw,
 * library, ...), so a slower stretch of the machine falls on both; the first Submission to a new
 * Object (constructor and migrations included) is timed the same way on fresh Objects.
 * Node's loopback request adds a floor of about 1.5 ms to every sample of both subjects.
 */
import { Effect, Schema } from "effect"
import { performance } from "node:perf_hooks"
import { postJson } from "../test/node/support/localWorker.ts"
import type { Figures, ObjectClient } from "./drivers.ts"

/** A measurement over several subjects at once: figures per case id. */
export type JointDriver = (
  objectOf: (subject: string) => ObjectClient,
) => Effect.Effect<Readonly<Record<string, Figures>>>

/** How many samples of each kind. */
export interface LatencySettings {
  readonly samples: number
  readonly warmups: number
  readonly cold: number
}

/** The subjects compared, by key in bench/subjects.ts, and the case ids they report as. */
export interface LatencyCases {
  readonly raw: { readonly subject: string; readonly warm: string; readonly cold: string }
  readonly thread: { readonly subject: string; readonly warm: string; readonly cold: string }
}

/** Where the time of one sample went, on the Object's clock (see bench/worker/latency.ts). */
const Phases = Schema.Struct({
  readyMs: Schema.Number,
  submitMs: Schema.Number,
  alarmMs: Schema.Number,
  answerMs: Schema.Number,
})
type Phases = typeof Phases.Type
const Stats = Schema.Struct({ deliveries: Schema.Number })

/** One sample: milliseconds from the submitting request to the answer, and its phases. */
interface Sample {
  readonly ms: number
  readonly phases: Phases
}

const sample = (object: ObjectClient, n: number) =>
  Effect.gen(function* () {
    const started = performance.now()
    const phases = yield* object.json(Phases, "latency", postJson({ n }))
    return { ms: performance.now() - started, phases } satisfies Sample
  })

const deliveries = (object: ObjectClient) =>
  Effect.map(object.json(Stats, "latency-stats", { method: "POST" }), (stats) => stats.deliveries)

/** The nearest-rank percentile `p` (0–1) of ascending `sorted`. */
const percentile = (sorted: ReadonlyArray<number>, p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))] ?? Number.NaN

const ascending = (values: ReadonlyArray<number>) => [...values].sort((a, b) => a - b)

const medianOf = (values: ReadonlyArray<number>) => percentile(ascending(values), 0.5)

const latencyFigures = (
  samples: ReadonlyArray<Sample>,
  options: { alarms?: number; ready?: boolean },
): Figures => {
  const sorted = ascending(samples.map((each) => each.ms))
  const phase = (key: keyof Phases) => medianOf(samples.map((each) => each.phases[key]))
  return {
    latencyP50Ms: percentile(sorted, 0.5),
    latencyP90Ms: percentile(sorted, 0.9),
    latencyP99Ms: percentile(sorted, 0.99),
    latencyMaxMs: sorted[sorted.length - 1] ?? Number.NaN,
    ...(options.alarms === undefined ? {} : { latencyAlarmsPerSample: options.alarms }),
    ...(options.ready === true ? { latencyReadyMs: phase("readyMs") } : {}),
    latencySubmitMs: phase("submitMs"),
    latencyAlarmMs: phase("alarmMs"),
    latencyAnswerMs: phase("answerMs"),
    latencyOutsideMs: medianOf(samples.map((each) => each.ms - each.phases.answerMs)),
  }
}

/** Warm-ups, then interleaved warm samples on one Object each, then interleaved new Objects. */
export const latencyDriver =
  (settings: LatencySettings, cases: LatencyCases): JointDriver =>
  (objectOf) =>
    Effect.gen(function* () {
      const raw = objectOf(cases.raw.subject)
      const thread = objectOf(cases.thread.subject)
      for (let n = 0; n < settings.warmups; n++) {
        yield* sample(raw, -1 - n)
        yield* sample(thread, -1 - n)
      }
      const before = { raw: yield* deliveries(raw), thread: yield* deliveries(thread) }
      const warm = { raw: [] as Array<Sample>, thread: [] as Array<Sample> }
      for (let n = 0; n < settings.samples; n++) {
        warm.raw.push(yield* sample(raw, n))
        warm.thread.push(yield* sample(thread, n))
      }
      // Deliveries that follow the last settlement (an acknowledging pass) count as its own.
      yield* Effect.sleep(1_000)
      const alarms = {
        raw: ((yield* deliveries(raw)) - before.raw) / settings.samples,
        thread: ((yield* deliveries(thread)) - before.thread) / settings.samples,
      }
      const cold = { raw: [] as Array<Sample>, thread: [] as Array<Sample> }
      for (let n = 0; n < settings.cold; n++) {
        cold.raw.push(yield* sample(raw.sibling(`new-${n}`), 0))
        cold.thread.push(yield* sample(thread.sibling(`new-${n}`), 0))
      }
      return {
        [cases.raw.warm]: latencyFigures(warm.raw, { alarms: alarms.raw }),
        [cases.thread.warm]: latencyFigures(warm.thread, { alarms: alarms.thread }),
        [cases.raw.cold]: latencyFigures(cold.raw, { ready: true }),
        [cases.thread.cold]: latencyFigures(cold.thread, { ready: true }),
      }
    })

/** A few samples on one Object, so that no measured sample pays for a cold isolate. */
export const latencyWarmup =
  (count: number) =>
  (object: ObjectClient): Effect.Effect<Figures> =>
    Effect.gen(function* () {
      const samples: Array<Sample> = []
      for (let n = 0; n < count; n++) samples.push(yield* sample(object, n))
      return latencyFigures(samples, {})
    })
