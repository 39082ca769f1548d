/**
 * A native CPU profile of workerd processes with Linux `perf` (`perf record -g -p`), summarized
 * by where each sample fell: V8's builtins and runtime, optimized JavaScript, SQLite, workerd and
 * its event loop, the kernel (with `fsync` apart), the allocator. A V8 profile sees JavaScript
 * only; this one also sees what the runtime does for it (statement preparation, commits, system
 * calls). workerd's binary keeps its symbols. Needs `perf` on the PATH and, for one's own
 * processes, `kernel.perf_event_paranoid` ≤ 2.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process"

/** A running `perf record`; `stop` ends it and summarizes what it sampled. */
export interface NativeProfile {
  readonly stop: () => Promise<NativeSummary>
}

export interface NativeSummary {
  /** How many samples, as perf counts them (e.g. "6K"). */
  readonly samples: string
  /** Category → share of the samples (0–1), largest first. */
  readonly categories: ReadonlyArray<readonly [string, number]>
  /** The share of the samples in `fsync` and what it calls (part of the kernel's). */
  readonly fsync: number
  /** The symbols with the most samples of their own: name → share. */
  readonly symbols: ReadonlyArray<readonly [string, number]>
}

/** The category of a sample's own frame, from its shared object and symbol. */
const categoryOf = (dso: string, symbol: string): string => {
  if (dso.includes("kernel")) return "kernel"
  if (dso.startsWith("[JIT]")) return "optimized JavaScript"
  if (symbol.startsWith("Builtins_")) return "V8 builtins"
  if (/v8::internal::(Scavenger|Marking|MarkCompact|Sweeper|Heap::|Concurrent|GC)/.test(symbol))
    return "garbage collection"
  if (symbol.includes("v8::")) return "V8 runtime"
  if (/sqlite|pcache|^wal|Vdbe|Btree|[Pp]ager|resolveExpr|yy_/.test(symbol)) return "SQLite"
  if (/tcmalloc|malloc|^free$/.test(symbol)) return "allocator"
  if (/workerd::|kj::|capnp::/.test(symbol)) return "workerd and its event loop"
  if (dso.startsWith("libc")) return "libc"
  return "other"
}

const shares = (counts: Map<string, number>, total: number) =>
  [...counts].sort((a, b) => b[1] - a[1]).map(([name, count]) => [name, count / total] as const)

/**
 * The summary of two `perf report --stdio` texts of one profile: `own` sorted by shared object and
 * symbol without children (each sample counted in its own frame), `inclusive` sorted by symbol
 * with children (for the share under `fsync`).
 */
export const summarizeReports = (own: string, inclusive: string): NativeSummary => {
  const categories = new Map<string, number>()
  const symbols = new Map<string, number>()
  let total = 0
  for (const line of own.split("\n")) {
    // "    3.63%  [kernel.kallsyms]  [k] iowrite16", "    0.12%  [JIT] tid 10192  [.] 0x5571…"
    const match = /^\s+([\d.]+)%\s+(\S.*?)\s+\[[.k]\]\s+(.*)$/.exec(line)
    if (match === null) continue
    const share = Number(match[1])
    const [, , dso = "", symbol = ""] = match
    total += share
    const category = categoryOf(dso, symbol)
    categories.set(category, (categories.get(category) ?? 0) + share)
    // JIT code has no symbols (addresses only): one entry for all of it.
    const name = category === "optimized JavaScript" ? "(optimized JavaScript)" : symbol
    symbols.set(name, (symbols.get(name) ?? 0) + share)
  }
  // fsync's share counts its callees too: the kernel's work on behalf of the call.
  let fsync = 0
  for (const line of inclusive.split("\n")) {
    const match = /^\s+([\d.]+)%\s+[\d.]+%\s+\[k\]\s+__x64_sys_fsync\s*$/.exec(line)
    if (match !== null) fsync = Number(match[1])
  }
  return {
    samples: /Samples: (\S+) of event/.exec(own)?.[1] ?? "?",
    categories: shares(categories, total || 1),
    fsync: fsync / (total || 1),
    symbols: shares(symbols, total || 1).slice(0, 20),
  }
}

const perfReport = (file: string, ...args: Array<string>) =>
  execFileSync("perf", ["report", "-i", file, "-g", "none", "--stdio", ...args], {
    encoding: "utf8",
    maxBuffer: 256 * 1024 * 1024,
    stdio: ["ignore", "pipe", "ignore"],
  })

/** Reads a `perf.data` file into the summary. */
export const summarize = (file: string): NativeSummary =>
  summarizeReports(
    perfReport(file, "--no-children", "--sort", "dso,sym"),
    perfReport(file, "--children", "--sort", "sym"),
  )

/** Starts sampling `pids` (999 Hz, call graphs) into `file`. */
export const startNativeProfile = (pids: ReadonlyArray<string>, file: string): NativeProfile => {
  const recorder: ChildProcess = spawn(
    "perf",
    ["record", "-F", "999", "-g", "-p", pids.join(","), "-o", file],
    { stdio: "ignore" },
  )
  const exited = new Promise<void>((resolve) => recorder.once("exit", () => resolve()))
  return {
    stop: async () => {
      recorder.kill("SIGINT")
      await exited
      return summarize(file)
    },
  }
}

/** The summary as lines to print. */
export const formatSummary = (summary: NativeSummary): ReadonlyArray<string> => [
  `native profile: ${summary.samples} samples, by where each fell`,
  ...summary.categories.map(
    ([name, share]) =>
      `${(share * 100).toFixed(1).padStart(6)}%  ${name}` +
      (name === "kernel" ? ` (fsync and what it calls: ${(summary.fsync * 100).toFixed(1)}%)` : ""),
  ),
  "own samples by symbol:",
  ...summary.symbols.map(
    ([name, share]) => `${(share * 100).toFixed(2).padStart(7)}%  ${name.slice(0, 120)}`,
  ),
]
