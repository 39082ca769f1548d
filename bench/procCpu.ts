/**
 * The CPU time of the workerd processes this Node process started, read from `/proc` (Linux
 * only): what the work costs, which wall time on a shared machine does not say reliably.
 */
import { readdirSync, readFileSync } from "node:fs"

/** The workerd processes Miniflare started for this process. */
export const workerdProcesses = (): ReadonlyArray<string> =>
  readdirSync("/proc")
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
        const parent = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]
        return (
          parent === String(process.pid) && readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("workerd")
        )
      } catch {
        return false
      }
    })

/** User and system CPU milliseconds of `pids` so far (10 ms clock ticks). */
export const cpuMillis = (
  pids: ReadonlyArray<string>,
): { readonly user: number; readonly system: number } => {
  let user = 0
  let system = 0
  for (const pid of pids) {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    user += Number(fields[11])
    system += Number(fields[12])
  }
  // USER_HZ is 100 on Linux.
  return { user: user * 10, system: system * 10 }
}

/** The user and system CPU milliseconds spent between two readings of `cpuMillis`. */
export const cpuSpent = (
  before: ReturnType<typeof cpuMillis>,
  after: ReturnType<typeof cpuMillis>,
): { readonly user: number; readonly system: number } => ({
  user: after.user - before.user,
  system: after.system - before.system,
})
