/**
 * What the bench measures: the subjects (Durable Object classes exported by
 * bench/worker/index.ts, one binding each) and the cases, grouped in sections that become one
 * table each. A case is one driver run on a fresh Object of a subject per repetition.
 */
import { join } from "node:path"
import {
  alarmLoopDriver,
  burstDriver,
  caughtUpDriver,
  type Driver,
  fairnessDriver,
  faninDriver,
  idleDriver,
  recoveryDriver,
  threadBurstDriver,
} from "./drivers.ts"
import { type JointDriver, latencyDriver, latencyWarmup } from "./latency.ts"
import { retentionDriver } from "./retention.ts"

/** What the run needs to know to set up and measure the cases. */
export interface BenchSettings {
  readonly burst: number
  readonly warmup: number
  readonly loopMs: number
  /** Backlog sizes of the scaling section. */
  readonly sizes: ReadonlyArray<number>
  /** A drain still running after this many seconds is stopped and reported as such. */
  readonly capSeconds: number
  readonly idleMs: number
  /** Burst of the throughput case at the default `alarmBackoffBase` (one item per 100 ms). */
  readonly defaultBurst: number
  /** Parked stable waits of the caught-up section. */
  readonly parked: ReadonlyArray<number>
  /** Threads of the fan-in section. */
  readonly faninThreads: number
  /** Sequential Submissions of the latency section, per subject and repetition. */
  readonly latencySamples: number
  /** Unmeasured samples before them. */
  readonly latencyWarmups: number
  /** New Objects per subject whose first Submission is timed. */
  readonly latencyCold: number
  /** Submissions of the retention section's sustained run, and its chunk. */
  readonly sustained: number
  readonly sustainedChunk: number
  /** The folder results are written to (a section measured once writes its files there too). */
  readonly outDir: string
}

/** A Durable Object class of the bench Worker. */
export interface Subject {
  readonly binding: string
  readonly className: string
  /** A short run made once first so that no figure pays for a cold start. */
  readonly warmup: (settings: BenchSettings) => Driver
}

export const subjects = {
  baseline: {
    binding: "BASELINE",
    className: "BaselineObject",
    warmup: ({ warmup }) => burstDriver(warmup),
  },
  alarmLoop: {
    binding: "ALARM_LOOP",
    className: "AlarmLoopObject",
    warmup: () => alarmLoopDriver(200),
  },
  thread: {
    binding: "THREADS",
    className: "ThreadBenchObject",
    warmup: ({ warmup }) => threadBurstDriver(warmup, 1, 60),
  },
  threadDefault: {
    binding: "THREADS_DEFAULT",
    className: "ThreadBenchDefaultObject",
    warmup: () => threadBurstDriver(5, 1, 60),
  },
  threadMulti: {
    binding: "THREADS_MULTI",
    className: "ThreadBenchMultiObject",
    warmup: ({ warmup }) => threadBurstDriver(warmup, 1, 60),
  },
  threadRetention: {
    binding: "THREADS_RETENTION",
    className: "ThreadBenchRetentionObject",
    warmup: ({ warmup }) => threadBurstDriver(warmup, 1, 60),
  },
  latencyRaw: {
    binding: "LATENCY_RAW",
    className: "LatencyRawObject",
    warmup: ({ latencyWarmups }) => latencyWarmup(latencyWarmups),
  },
  latencyThread: {
    binding: "LATENCY_THREADS",
    className: "LatencyThreadObject",
    warmup: ({ latencyWarmups }) => latencyWarmup(latencyWarmups),
  },
} satisfies Record<string, Subject>

/** One row of a section's table. */
export interface Case {
  readonly id: string
  readonly label: string
  readonly subject: keyof typeof subjects
  /** Its measurement, unless its section measures all its cases at once (`joint`). */
  readonly driver?: Driver
  /** Reuse the figures of that case (the same measurement) instead of measuring again. */
  readonly sameAs?: string
}

/**
 * One table: its cases and the figures shown as columns. Each repetition measures every case
 * once, in order, so cases compared with each other are measured interleaved and repetition
 * `i` of one pairs with repetition `i` of another.
 */
export interface Section {
  readonly id: string
  readonly title: string
  readonly figures: ReadonlyArray<string>
  readonly cases: ReadonlyArray<Case>
  /** Its cases are compared as ratios: it is repeated `--pair-runs` times instead of `--runs`. */
  readonly compared?: boolean
  /** One measurement per repetition that reports every case (interleaved inside it). */
  readonly joint?: JointDriver
  /** Measured once whatever `--runs` says: its driver repeats inside (the retention run). */
  readonly once?: boolean
}

const perItemFigures = [
  "alarmDeliveriesPerItem",
  "sqlRowsReadPerItem",
  "sqlRowsWrittenPerItem",
  "kvKeysWrittenPerItem",
  "billedRowsWrittenPerItem",
  "passKvKeysWrittenPerItem",
  "totalChangesPerItem",
  "sqlStatementsPerItem",
  "kvKeysReadPerItem",
  "alarmCallsPerItem",
  "itemsPerSecond",
]

const count = (n: number) => n.toLocaleString("en-US")

/** The sections of a run, in order. */
export const sections = (settings: BenchSettings): ReadonlyArray<Section> => [
  {
    id: "caughtUp",
    title: "1. Caught-up pass (a forced alarm with nothing owed)",
    figures: [
      "caughtUpStatements",
      "caughtUpRowsRead",
      "caughtUpRowsWritten",
      "caughtUpChanges",
      "caughtUpKvKeys",
      "caughtUpBilledWritten",
      "caughtUpAlarmCalls",
      "caughtUpWallMs",
      "classifyRowsRead",
      "classifyRowsWritten",
      "classifyBilledWritten",
      "classifyWallMs",
    ],
    cases: settings.parked.map((parked) => ({
      id: `caughtUp-${parked}`,
      label: `${count(parked)} parked stable waits`,
      subject: "thread" as const,
      driver: caughtUpDriver(parked),
    })),
  },
  {
    id: "perItem",
    title: `2. Cost per settled Submission (burst of ${count(settings.burst)}, one lane; subjects interleaved)`,
    figures: perItemFigures,
    compared: true,
    cases: [
      {
        id: "perItem-baseline",
        label: "baseline (raw SQL queue)",
        subject: "baseline",
        driver: burstDriver(settings.burst),
      },
      {
        id: "perItem-thread",
        label: "ThreadObject (alarmBackoffBase 1 ms)",
        subject: "thread",
        driver: threadBurstDriver(settings.burst, 1, settings.capSeconds),
      },
      {
        id: "perItem-multi",
        label: "ThreadObject (maxHeadsPerEvent 1,000, default timing)",
        subject: "threadMulti",
        driver: threadBurstDriver(settings.burst, 1, settings.capSeconds),
      },
    ],
  },
  {
    id: "scaling",
    title: "3. Backlog scaling (drain N queued Submissions)",
    figures: [
      "seconds",
      "totalRowsRead",
      "totalRowsWritten",
      "totalBilledRowsWritten",
      "totalChanges",
      "sqlRowsReadPerItem",
      "billedRowsWrittenPerItem",
      "totalChangesPerItem",
      "completed",
      "settledAtCap",
      "secondsAtCap",
    ],
    cases: [1, 100].flatMap((lanes) =>
      settings.sizes.map((size) => ({
        id: `scaling-${lanes}-${size}`,
        label: `N=${count(size)}, ${lanes} lane${lanes === 1 ? "" : "s"}`,
        subject: "thread" as const,
        driver: threadBurstDriver(size, lanes, settings.capSeconds),
      })),
    ),
  },
  {
    id: "fairness",
    title: "4. Fairness (one lane with 1,000 queued, 100 lanes with one each)",
    figures: ["lanes", "maxColdWait", "hotLastDelivery"],
    cases: [{ id: "fairness", label: "ThreadObject", subject: "thread", driver: fairnessDriver(1000, 100) }],
  },
  {
    id: "idle",
    title: `5. Idle cost (alarm slot once quiescent, deliveries during ${settings.idleMs} ms)`,
    figures: ["idleAlarmScheduled", "idleDeliveriesInWindow", "idleDeliveriesPerHour"],
    cases: [
      {
        id: "idle-drained",
        label: "nothing owed (drained)",
        subject: "thread",
        driver: idleDriver(0, settings.idleMs),
      },
      {
        id: "idle-parked",
        label: "only stable waits (100 parked)",
        subject: "thread",
        driver: idleDriver(100, settings.idleMs),
      },
    ],
  },
  {
    id: "throughput",
    title: "6. Throughput ceiling (settled Submissions per second per Object)",
    figures: ["loopDeliveriesPerSecond", "itemsPerSecond", "drainItemsPerSecond"],
    cases: [
      {
        id: "throughput-loop",
        label: "raw self-re-arming alarm loop",
        subject: "alarmLoop",
        driver: alarmLoopDriver(settings.loopMs),
      },
      {
        id: "throughput-fast",
        label: `ThreadObject, alarmBackoffBase 1 ms (${count(settings.burst)}, as in 2.)`,
        subject: "thread",
        driver: threadBurstDriver(settings.burst, 1, settings.capSeconds),
        sameAs: "perItem-thread",
      },
      {
        id: "throughput-default",
        label: `ThreadObject, alarmBackoffBase default (${count(settings.defaultBurst)})`,
        subject: "threadDefault",
        driver: threadBurstDriver(settings.defaultBurst, 1, settings.capSeconds),
      },
      {
        id: "throughput-multi",
        label: `ThreadObject, maxHeadsPerEvent 1,000, default timing (${count(settings.burst)}, as in 2.)`,
        subject: "threadMulti",
        driver: threadBurstDriver(settings.burst, 1, settings.capSeconds),
        sameAs: "perItem-multi",
      },
    ],
  },
  {
    id: "recovery",
    title:
      "7. Recovery after a crash (workerd stopped while every Object's head holds a Claim, then started again; default config)",
    figures: ["recoveryLanes", "recoveryRecovered", "recoveryMedianMs", "recoveryMaxMs"],
    cases: [
      {
        id: "recovery-20",
        label: "20 Objects, one Thread each, 20 queued per Thread",
        subject: "threadDefault",
        driver: recoveryDriver(20, 19, 60),
      },
    ],
  },
  {
    id: "fanin",
    title: `8. Fan-in (${count(settings.faninThreads)} Threads in one Object, each submits one Submission that asks for an approval; default config)`,
    figures: [
      "faninSeconds",
      "faninSubmitSeconds",
      "faninDeliveries",
      "faninDeliveriesAfter",
      "faninAlarmScheduled",
    ],
    cases: [
      {
        id: "fanin",
        label: "ThreadObject, one head per event",
        subject: "threadDefault",
        driver: faninDriver(settings.faninThreads, settings.idleMs, settings.capSeconds),
      },
    ],
  },
  {
    id: "latency",
    title: `9. Latency in ms, submit to settlement seen by the caller (one request each, timed in Node; warm: ${count(settings.latencySamples)} sequential one-step Submissions on one Object after ${settings.latencyWarmups} warm-ups; new: the first Submission to each of ${settings.latencyCold} new Objects, constructor and migrations included; raw and ThreadObject alternate sample by sample; the median columns are phases on the Object's clock, from the request's start except the first)`,
    figures: [
      "latencyP50Ms",
      "latencyP90Ms",
      "latencyP99Ms",
      "latencyMaxMs",
      "latencyAlarmsPerSample",
      "latencyReadyMs",
      "latencySubmitMs",
      "latencyAlarmMs",
      "latencyAnswerMs",
      "latencyOutsideMs",
    ],
    compared: true,
    cases: [
      { id: "latency-raw", label: "raw Durable Object, warm", subject: "latencyRaw" },
      { id: "latency-thread", label: "ThreadObject (default config), warm", subject: "latencyThread" },
      { id: "latency-raw-new", label: "raw Durable Object, new Object", subject: "latencyRaw" },
      {
        id: "latency-thread-new",
        label: "ThreadObject (default config), new Object",
        subject: "latencyThread",
      },
    ],
    joint: latencyDriver(
      { samples: settings.latencySamples, warmups: settings.latencyWarmups, cold: settings.latencyCold },
      {
        raw: { subject: "latencyRaw", warm: "latency-raw", cold: "latency-raw-new" },
        thread: { subject: "latencyThread", warm: "latency-thread", cold: "latency-thread-new" },
      },
    ),
  },
  {
    id: "retention",
    title: `10. Retention (${count(settings.sustained)} one-step Submissions through one Object in chunks of ${count(settings.sustainedChunk)} over 4 Threads, removed 2 s after settling, beside the same Object keeping everything, chunks interleaved; items/s: median and range over the chunks; rows: what the statements only retention runs read and wrote, per Submission removed)`,
    figures: [
      "retentionItems",
      "retentionRemoved",
      "retentionMbHalf",
      "retentionMbEnd",
      "retentionMbMax",
      "retentionMbEndKept",
      "retentionWrittenPerRemoved",
      "retentionReadPerRemoved",
      "retentionRateOn",
      "retentionRateOnMin",
      "retentionRateOnMax",
      "retentionRateOff",
      "retentionRateOffMin",
      "retentionRateOffMax",
    ],
    once: true,
    cases: [
      {
        id: "retention-sustained",
        label: "ThreadObject, maxHeadsPerEvent 1,000",
        subject: "threadRetention",
        driver: retentionDriver(
          settings.sustained,
          settings.sustainedChunk,
          4,
          (object) => object.other(subjects.threadMulti.binding, "kept"),
          join(settings.outDir, "retention.svg"),
        ),
      },
    ],
  },
]
