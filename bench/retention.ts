/**
 * The retention section of the bench: a sustained run through one Object with a short retention
 * (settled Submissions removed two seconds after they settle) beside the same Object keeping
 * everything, chunk by chunk, interleaved, so both see the same machine at the same time. It
 * reports items/s per chunk (median and spread over chunks), the database's bytes over the run
 * (plotted to retention.svg beside the results), and what removing one Submission costs: the rows the
 * statements only retention runs wrote and read, per Submission removed (the gate's alarm
 * writes per batch are not rows).
 */
import { Effect } from "effect"
import { writeFile } from "node:fs/promises"
import { postJson } from "../test/node/support/localWorker.ts"
import type { Driver, Figures, ObjectClient } from "./drivers.ts"
import { SustainReport } from "./worker/report.ts"

interface Point {
  readonly items: number
  readonly bytes: number
}

const median = (values: ReadonlyArray<number>) => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}

/** A small line plot of database megabytes against Submissions, one line per Object. */
export const plot = (
  series: ReadonlyArray<{
    readonly label: string
    readonly color: string
    readonly points: ReadonlyArray<Point>
  }>,
) => {
  const width = 640
  const height = 320
  const margin = { left: 60, right: 20, top: 30, bottom: 40 }
  const maxItems = Math.max(1, ...series.flatMap((line) => line.points.map((p) => p.items)))
  const maxMb = Math.max(1, ...series.flatMap((line) => line.points.map((p) => p.bytes / 1e6)))
  const x = (items: number) => margin.left + (items / maxItems) * (width - margin.left - margin.right)
  const y = (mb: number) => height - margin.bottom - (mb / maxMb) * (height - margin.top - margin.bottom)
  const ticks = [0, 0.25, 0.5, 0.75, 1]
  const lines = series.map(
    (line) =>
      `<polyline fill="none" stroke="${line.color}" stroke-width="2" points="${line.points
        .map((p) => `${x(p.items).toFixed(1)},${y(p.bytes / 1e6).toFixed(1)}`)
        .join(" ")}"/>`,
  )
  const legend = series.map(
    (line, index) =>
      `<text x="${margin.left + 10}" y="${margin.top + 16 * (index + 1)}" fill="${line.color}" font-size="12">${line.label}</text>`,
  )
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif">`,
    `<rect width="${width}" height="${height}" fill="white"/>`,
    `<text x="${width / 2}" y="18" text-anchor="middle" font-size="13">Database size over a sustained run (one Object)</text>`,
    ...ticks.map(
      (t) =>
        `<line x1="${margin.left}" x2="${width - margin.right}" y1="${y(t * maxMb)}" y2="${y(t * maxMb)}" stroke="#ddd"/>` +
        `<text x="${margin.left - 6}" y="${y(t * maxMb) + 4}" text-anchor="end" font-size="11">${(t * maxMb).toFixed(1)}</text>` +
        `<text x="${x(t * maxItems)}" y="${height - margin.bottom + 16}" text-anchor="middle" font-size="11">${Math.round(t * maxItems).toLocaleString("en-US")}</text>`,
    ),
    `<text x="14" y="${height / 2}" transform="rotate(-90 14 ${height / 2})" text-anchor="middle" font-size="12">MB (databaseSize)</text>`,
    `<text x="${width / 2}" y="${height - 6}" text-anchor="middle" font-size="12">one-step Submissions settled</text>`,
    ...lines,
    ...legend,
    `</svg>`,
  ].join("\n")
}

/**
 * `total` Submissions through the pruning Object and as many through the keeping one, in chunks
 * of `chunk` over `lanes` Threads, the two Objects taking turns; the plot is written to `plotPath`.
 */
export const retentionDriver =
  (
    total: number,
    chunk: number,
    lanes: number,
    keeping: (object: ObjectClient) => ObjectClient,
    plotPath: string,
  ): Driver =>
  (pruning) =>
    Effect.gen(function* () {
      const objects = { on: pruning, off: keeping(pruning) }
      const rates = { on: [] as Array<number>, off: [] as Array<number> }
      const points = { on: [] as Array<Point>, off: [] as Array<Point> }
      const pruned = { read: 0, written: 0 }
      for (let offset = 0; offset < total; offset += chunk) {
        const count = Math.min(chunk, total - offset)
        for (const side of ["on", "off"] as const) {
          const report = yield* objects[side].json(
            SustainReport,
            "sustain",
            postJson({ count, lanes, offset }),
          )
          rates[side].push(report.items / (report.ms / 1000))
          points[side].push({ items: offset + count, bytes: report.databaseBytes })
          if (side === "on") {
            pruned.read += report.pruneRowsRead
            pruned.written += report.pruneRowsWritten
          }
        }
        console.error(
          `retention: ${offset + count}/${total}, ${(points.on.at(-1)!.bytes / 1e6).toFixed(1)} MB pruning, ` +
            `${(points.off.at(-1)!.bytes / 1e6).toFixed(1)} MB keeping`,
        )
      }
      yield* Effect.promise(() =>
        writeFile(
          plotPath,
          `${plot([
            { label: "retention 2 s (settledForMillis 2000)", color: "#1f77b4", points: points.on },
            { label: "kept forever (the default)", color: "#d62728", points: points.off },
          ])}\n`,
        ),
      )
      // A last call reports what retention did after the last chunk, and the rows it left.
      const last = yield* objects.on.json(
        SustainReport,
        "sustain",
        postJson({ count: 0, lanes, offset: total }),
      )
      pruned.read += last.pruneRowsRead
      pruned.written += last.pruneRowsWritten
      const removed = total - last.rowsBefore
      const half = points.on[Math.floor(points.on.length / 2)]?.bytes ?? Number.NaN
      const figures: Figures = {
        retentionItems: total,
        retentionRemoved: removed,
        retentionMbHalf: half / 1e6,
        retentionMbEnd: points.on.at(-1)!.bytes / 1e6,
        retentionMbMax: Math.max(...points.on.map((p) => p.bytes)) / 1e6,
        retentionMbEndKept: points.off.at(-1)!.bytes / 1e6,
        retentionWrittenPerRemoved: pruned.written / removed,
        retentionReadPerRemoved: pruned.read / removed,
        retentionRateOn: median(rates.on),
        retentionRateOnMin: Math.min(...rates.on),
        retentionRateOnMax: Math.max(...rates.on),
        retentionRateOff: median(rates.off),
        retentionRateOffMin: Math.min(...rates.off),
        retentionRateOffMax: Math.max(...rates.off),
      }
      return figures
    })
