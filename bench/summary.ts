/** Min/median/max over repetitions, and the readable table printed at the end of a run. */
import { figureCatalog, type Figures } from "./drivers.ts"
import type { Subject } from "./subjects.ts"

/** One figure over all repetitions. */
export interface Spread {
  readonly min: number
  readonly median: number
  readonly max: number
  readonly runs: ReadonlyArray<number>
}

/** Per subject id, per figure key, the spread over repetitions. */
export type Summary = Readonly<Record<string, Readonly<Record<string, Spread>>>>

const spread = (values: ReadonlyArray<number>): Spread => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  const median = sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
  return { min: sorted[0]!, median, max: sorted[sorted.length - 1]!, runs: values }
}

/** Groups the figures of every repetition (`runs[i][subjectId]`) into spreads. */
export const summarize = (
  subjects: ReadonlyArray<Subject>,
  runs: ReadonlyArray<Readonly<Record<string, Figures>>>,
): Summary =>
  Object.fromEntries(
    subjects.map((subject) => {
      const keys = [...new Set(runs.flatMap((run) => Object.keys(run[subject.id] ?? {})))]
      const figures = keys.map((key) => [
        key,
        spread(runs.map((run) => run[subject.id]?.[key] ?? Number.NaN)),
      ])
      return [subject.id, Object.fromEntries(figures)]
    }),
  )

const cell = (value: Spread | undefined, digits: number): string =>
  value === undefined
    ? "—"
    : value.runs.length === 1
      ? value.median.toFixed(digits)
      : `${value.median.toFixed(digits)} (${value.min.toFixed(digits)}–${value.max.toFixed(digits)})`

/** A plain-text table: one row per figure any subject reported, one column per subject. */
export const formatTable = (subjects: ReadonlyArray<Subject>, summary: Summary): string => {
  const rows = figureCatalog
    .filter(({ key }) => subjects.some((subject) => summary[subject.id]?.[key] !== undefined))
    .map(({ key, label, digits }) => [
      label,
      ...subjects.map((subject) => cell(summary[subject.id]?.[key], digits)),
    ])
  const header = ["median (min–max)", ...subjects.map((subject) => subject.label)]
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => row[column]!.length)),
  )
  const line = (row: ReadonlyArray<string>) =>
    row
      .map((text, column) => (column === 0 ? text.padEnd(widths[column]!) : text.padStart(widths[column]!)))
      .join("  ")
  return [line(header), widths.map((width) => "-".repeat(width)).join("  "), ...rows.map(line)].join("\n")
}
