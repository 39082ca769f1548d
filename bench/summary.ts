/** Min/median/max over repetitions, derived ratios, and the readable tables of a run. */
import { agentsSdkQueueCited, costPerMillion, type ItemCost, type ItemWork } from "./cost.ts"
import { figureCatalog, type Figures } from "./drivers.ts"
import type { Section } from "./subjects.ts"

/** One figure over all repetitions. */
export interface Spread {
  readonly min: number
  readonly median: number
  readonly max: number
  readonly runs: ReadonlyArray<number>
}

/** Per case id, per figure key, the spread over repetitions. */
export type Summary = Readonly<Record<string, Readonly<Record<string, Spread>>>>

// A figure a run could not report (a drain stopped at its cap has no total) is left out.
const spread = (values: ReadonlyArray<number>): Spread => {
  const sorted = values.filter(Number.isFinite).sort((a, b) => a - b)
  if (sorted.length === 0) return { min: Number.NaN, median: Number.NaN, max: Number.NaN, runs: values }
  const middle = Math.floor(sorted.length / 2)
  const median = sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
  return { min: sorted[0]!, median, max: sorted[sorted.length - 1]!, runs: values }
}

/** Groups the figures of every repetition of each case into spreads. */
export const summarize = (measured: Readonly<Record<string, ReadonlyArray<Figures>>>): Summary =>
  Object.fromEntries(
    Object.entries(measured).map(([id, runs]) => {
      const keys = [...new Set(runs.flatMap((run) => Object.keys(run)))]
      return [
        id,
        Object.fromEntries(keys.map((key) => [key, spread(runs.map((run) => run[key] ?? Number.NaN))])),
      ]
    }),
  )

const cell = (value: Spread | undefined, digits: number): string =>
  value === undefined
    ? "—"
    : value.runs.length === 1 || value.min === value.max
      ? value.median.toFixed(digits)
      : `${value.median.toFixed(digits)} (${value.min.toFixed(digits)}–${value.max.toFixed(digits)})`

const table = (header: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>): string => {
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => row[column]!.length)),
  )
  const line = (row: ReadonlyArray<string>) =>
    row
      .map((text, column) => (column === 0 ? text.padEnd(widths[column]!) : text.padStart(widths[column]!)))
      .join("  ")
  return [line(header), widths.map((width) => "-".repeat(width)).join("  "), ...rows.map(line)].join("\n")
}

/** A plain-text table per section: one row per case, one column per figure any case reported. */
export const formatSection = (section: Section, summary: Summary): string => {
  const figures = figureCatalog.filter(
    ({ key }) =>
      section.figures.includes(key) && section.cases.some((each) => summary[each.id]?.[key] !== undefined),
  )
  const rows = section.cases
    .filter((each) => summary[each.id] !== undefined)
    .map((each) => [each.label, ...figures.map(({ key, digits }) => cell(summary[each.id]?.[key], digits))])
  return `${section.title}\n${table(["median (min–max)", ...figures.map(({ label }) => label)], rows)}`
}

const median = (summary: Summary, id: string, key: string): number | undefined => summary[id]?.[key]?.median

/** The ratios of the repetitions of two cases measured side by side (repetition i with i). */
export interface Pairs {
  readonly min: number
  readonly max: number
  readonly count: number
}

/** A derived figure: a ratio of medians with what it is compared against. */
export interface Derived {
  readonly label: string
  readonly value: number
  readonly goal?: string
  /** For two cases of one section: the same ratio per repetition. */
  readonly pairs?: Pairs
}

const ratio = (
  label: string,
  numerator: number | undefined,
  denominator: number | undefined,
  goal?: string,
  pairs?: Pairs,
): ReadonlyArray<Derived> =>
  numerator === undefined || denominator === undefined || denominator === 0
    ? []
    : [
        {
          label,
          value: numerator / denominator,
          ...(goal === undefined ? {} : { goal }),
          ...(pairs === undefined ? {} : { pairs }),
        },
      ]

/** Repetition i of `numerator` over repetition i of `denominator`, for cases measured interleaved. */
const pairsOf = (
  summary: Summary,
  numerator: string,
  denominator: string,
  key: string,
): Pairs | undefined => {
  const top = summary[numerator]?.[key]?.runs
  const bottom = summary[denominator]?.[key]?.runs
  if (top === undefined || bottom === undefined || top.length !== bottom.length) return undefined
  const ratios = top.map((value, index) => value / bottom[index]!).filter(Number.isFinite)
  if (ratios.length === 0) return undefined
  return { min: Math.min(...ratios), max: Math.max(...ratios), count: ratios.length }
}

/** The ratio of medians of `key` between two cases of one section, with its pairs. */
const paired = (
  summary: Summary,
  label: string,
  numerator: string,
  denominator: string,
  key: string,
  goal?: string,
) =>
  ratio(
    label,
    median(summary, numerator, key),
    median(summary, denominator, key),
    goal,
    pairsOf(summary, numerator, denominator, key),
  )

/** The default `alarmBackoffBase`, which the fan-in goal is stated in. */
const DEFAULT_BACKOFF_BASE_MILLIS = 100

/** Ratios against the baseline, the raw alarm loop, and between backlog sizes. */
export const derive = (
  summary: Summary,
  sizes: ReadonlyArray<number>,
  faninThreads: number,
): ReadonlyArray<Derived> => {
  const thread = "perItem-thread"
  const baseline = "perItem-baseline"
  const perItem = [
    ...ratio(
      "row changes / item, ThreadObject ÷ baseline",
      median(summary, thread, "totalChangesPerItem"),
      median(summary, baseline, "totalChangesPerItem"),
      "≤ 3",
    ),
    ...ratio(
      "rows read / item, ThreadObject ÷ baseline",
      median(summary, thread, "sqlRowsReadPerItem"),
      median(summary, baseline, "sqlRowsReadPerItem"),
    ),
    ...ratio(
      "rows read / item, ThreadObject ÷ Agents SDK (26)",
      median(summary, thread, "sqlRowsReadPerItem"),
      26,
      "≤ 1",
    ),
    ...ratio(
      "rows written / item, ThreadObject ÷ baseline",
      median(summary, thread, "sqlRowsWrittenPerItem"),
      median(summary, baseline, "sqlRowsWrittenPerItem"),
    ),
    ...ratio(
      "billed rows written / item, ThreadObject (÷ 1)",
      median(summary, thread, "billedRowsWrittenPerItem"),
      1,
      "≤ 12",
    ),
    ...ratio(
      "billed rows written / item, ThreadObject ÷ baseline",
      median(summary, thread, "billedRowsWrittenPerItem"),
      median(summary, baseline, "billedRowsWrittenPerItem"),
    ),
    ...ratio(
      "billed rows written / item, ThreadObject ÷ Agents SDK queue() (4, cited)",
      median(summary, thread, "billedRowsWrittenPerItem"),
      agentsSdkQueueCited.rowsWritten,
    ),
    ...ratio(
      "alarms / item, ThreadObject ÷ baseline",
      median(summary, thread, "alarmDeliveriesPerItem"),
      median(summary, baseline, "alarmDeliveriesPerItem"),
    ),
  ]
  const multi = "perItem-multi"
  const multiHead = [
    ...paired(summary, "items/s, default config ÷ raw SQL queue", multi, baseline, "itemsPerSecond", "≥ 0.8"),
    ...paired(
      summary,
      "items/s, default config over 100 lanes ÷ raw SQL queue",
      "perItem-lanes",
      baseline,
      "itemsPerSecond",
      "≥ 0.8",
    ),
    ...paired(summary, "items/s, alarmBackoffBase 1 ms ÷ raw SQL queue", thread, baseline, "itemsPerSecond"),
    ...ratio("alarms / item, default config", median(summary, multi, "alarmDeliveriesPerItem"), 1, "< 1"),
    ...ratio(
      "record writes by passes / item, default config",
      median(summary, multi, "passKvKeysWrittenPerItem"),
      1,
      "< 1",
    ),
    ...ratio(
      "billed rows written / item, default config",
      median(summary, multi, "billedRowsWrittenPerItem"),
      1,
      "≤ 11",
    ),
  ]
  const billedEverywhere = [1, 100].flatMap((lanes) =>
    sizes.flatMap((size) =>
      ratio(
        `billed rows written / item, N=${size}, ${lanes} lane${lanes === 1 ? "" : "s"}`,
        median(summary, `scaling-${lanes}-${size}`, "billedRowsWrittenPerItem"),
        1,
        "≤ 12",
      ),
    ),
  )
  const fanin = ratio(
    `fan-in seconds ÷ (${faninThreads} × alarmBackoffBase + 1 s)`,
    median(summary, "fanin", "faninSeconds"),
    (faninThreads * DEFAULT_BACKOFF_BASE_MILLIS + 1_000) / 1_000,
    "≤ 1",
  )
  // A run stopped at its time cap is extrapolated from the items it settled: per-item figures
  // times N (the label says so).
  const total = (id: string, size: number, key: "totalRowsRead" | "totalChanges" | "seconds") => {
    if (median(summary, id, "completed") === 1) return median(summary, id, key)
    const perItem =
      key === "seconds"
        ? 1 / (median(summary, id, "itemsPerSecond") ?? Number.NaN)
        : median(summary, id, key === "totalRowsRead" ? "sqlRowsReadPerItem" : "totalChangesPerItem")
    return perItem === undefined || !Number.isFinite(perItem) ? undefined : perItem * size
  }
  const scaling = [1, 100].flatMap((lanes) =>
    sizes.slice(1).flatMap((size, index) => {
      const smaller = sizes[index]!
      const big = `scaling-${lanes}-${size}`
      const small = `scaling-${lanes}-${smaller}`
      const extrapolated =
        median(summary, big, "completed") !== 1 || median(summary, small, "completed") !== 1
      const goal = `≤ ${((size / smaller) * 1.2).toFixed(0)}`
      return (["totalRowsRead", "totalChanges", "seconds"] as const).flatMap((key) =>
        ratio(
          `${lanes} lane${lanes === 1 ? "" : "s"}: ${key} N=${size} ÷ N=${smaller}${extrapolated ? " (extrapolated)" : ""}`,
          total(big, size, key),
          total(small, smaller, key),
          goal,
        ),
      )
    }),
  )
  const loop = median(summary, "throughput-loop", "loopDeliveriesPerSecond")
  const throughput = [
    ...ratio(
      "items/s ÷ raw alarm loop deliveries/s, one head per event, alarmBackoffBase 1 ms",
      median(summary, "throughput-fast", "drainItemsPerSecond"),
      loop,
    ),
    ...ratio(
      "items/s ÷ raw alarm loop deliveries/s, BETA96_PACING, default timing",
      median(summary, "throughput-default", "drainItemsPerSecond"),
      loop,
    ),
  ]
  const latency = [
    ...paired(
      summary,
      "latency p50, warm: ThreadObject ÷ raw",
      "latency-thread",
      "latency-raw",
      "latencyP50Ms",
      "≤ 1.5",
    ),
    ...paired(
      summary,
      "latency p99, warm: ThreadObject ÷ raw",
      "latency-thread",
      "latency-raw",
      "latencyP99Ms",
      "≤ 2",
    ),
    ...paired(
      summary,
      "latency p50, new Object: ThreadObject ÷ raw",
      "latency-thread-new",
      "latency-raw-new",
      "latencyP50Ms",
      "≤ 2",
    ),
  ]
  return [...perItem, ...multiHead, ...billedEverywhere, ...scaling, ...throughput, ...fanin, ...latency]
}

/** The derived ratios as a table; a goal holds only if it holds for the worst pair too. */
export const formatDerived = (derived: ReadonlyArray<Derived>): string =>
  `Ratios (of medians; for subjects measured side by side, also per repetition: min–max over pairs)\n${table(
    ["ratio", "value", "pairs", "goal"],
    derived.map((each) => [
      each.label,
      each.value.toFixed(2),
      each.pairs === undefined
        ? ""
        : `${each.pairs.min.toFixed(2)}–${each.pairs.max.toFixed(2)} (${each.pairs.count})`,
      each.goal ?? "",
    ]),
  )}`

/** One subject's billed work per settled item and its dollars per million items. */
export interface CostRow {
  readonly label: string
  readonly work: ItemWork
  readonly cost: ItemCost
  /** Where the figures come from, when not measured by this run. */
  readonly source?: string
}

/** The measured cases the cost model prices: every case with per-item figures. */
const pricedCases: ReadonlyArray<readonly [string, string]> = [
  ["perItem-baseline", "raw SQL queue (measured)"],
  ["perItem-thread", "ThreadObject, one head per event, alarmBackoffBase 1 ms (measured)"],
  ["throughput-default", "ThreadObject, BETA96_PACING, default timing (measured)"],
  ["perItem-multi", "ThreadObject, default config (measured)"],
]

/**
 * Dollars per million settled items at Cloudflare's published prices. Each item is one submit
 * request plus its alarm deliveries; its duration is the wall time of its burst divided over
 * its items (the Object is active throughout), at 128 MB.
 */
export const costRows = (summary: Summary): ReadonlyArray<CostRow> => {
  const measured = pricedCases.flatMap(([id, label]): ReadonlyArray<CostRow> => {
    const written = median(summary, id, "billedRowsWrittenPerItem")
    const read = median(summary, id, "sqlRowsReadPerItem")
    const alarms = median(summary, id, "alarmDeliveriesPerItem")
    const perSecond = median(summary, id, "itemsPerSecond")
    if (written === undefined || read === undefined || alarms === undefined || perSecond === undefined)
      return []
    const work: ItemWork = {
      rowsWritten: written,
      rowsRead: read,
      requests: 1 + alarms,
      seconds: 1 / perSecond,
    }
    return [{ label, work, cost: costPerMillion(work) }]
  })
  return [
    ...measured,
    {
      label: "Agents SDK queue(), one request per item (cited)",
      work: agentsSdkQueueCited,
      cost: costPerMillion(agentsSdkQueueCited),
      source: "../shared/peer-figures.md (local workerd, 2026-12-02); duration not measured",
    },
  ]
}

const dollars = (value: number) => `$${value.toFixed(value >= 10 ? 2 : value >= 0.1 ? 3 : 4)}`

/** The cost model as a table. */
export const formatCost = (rows: ReadonlyArray<CostRow>): string =>
  `Cost per million settled Submissions (rows written $1.00/M, rows read $0.001/M, requests $0.15/M incl. alarm deliveries, duration $12.50/M GB-s at 128 MB)\n${table(
    [
      "subject (medians)",
      "billed rows written/item",
      "rows read/item",
      "requests/item",
      "ms/item",
      "rows written",
      "rows read",
      "requests",
      "duration",
      "total",
    ],
    rows.map(({ label, work, cost, source }) => [
      label,
      work.rowsWritten.toFixed(2),
      work.rowsRead.toFixed(1),
      work.requests.toFixed(2),
      source === undefined ? (work.seconds * 1000).toFixed(2) : "—",
      dollars(cost.rowsWritten),
      dollars(cost.rowsRead),
      dollars(cost.requests),
      source === undefined ? dollars(cost.duration) : "—",
      dollars(cost.total),
    ]),
  )}`
