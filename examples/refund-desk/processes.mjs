// The processes of a dev server, read from /proc (Linux only): what `npm start` needs to stop a
// server a kill left half alive, and to notice when the command that launched it is gone.
import { readdirSync, readFileSync } from "node:fs"

export const read = (path) => {
  try {
    return readFileSync(path, "utf8")
  } catch {
    return undefined
  }
}
/**
 * A process's name, parent and start time (clock ticks since boot), or undefined once it is gone.
 * A zombie (ended, not yet reaped by its parent) is gone.
 */
export const statOf = (pid) => {
  const stat = read(`/proc/${pid}/stat`)
  if (stat === undefined) return undefined
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
  if (fields[0] === "Z") return undefined
  return {
    name: stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")")),
    parent: Number(fields[1]),
    start: fields[19],
  }
}
/** Every process below `ancestor`, with its name and start time. */
export const descendants = (ancestor) => {
  const children = new Map()
  for (const entry of readdirSync("/proc")) {
    const stat = /^\d+$/.test(entry) ? statOf(entry) : undefined
    if (stat === undefined) continue
    const siblings = children.get(stat.parent) ?? []
    siblings.push({ pid: Number(entry), name: stat.name, start: stat.start })
    children.set(stat.parent, siblings)
  }
  const found = []
  for (let queue = [ancestor]; queue.length > 0;) {
    const next = children.get(queue.shift()) ?? []
    found.push(...next)
    queue.push(...next.map((entry) => entry.pid))
  }
  return found
}
/** Stops the listed processes that still run (the same start time: not a reused pid). */
export const stopLeft = async (listed, why) => {
  const left = listed.filter((entry) => statOf(entry.pid)?.start === entry.start)
  if (left.length === 0) return
  for (const { pid } of left) {
    try {
      process.kill(pid, "SIGKILL")
    } catch {
      // Already gone.
    }
  }
  for (let waited = 0; waited < 5_000 && left.some(({ pid }) => statOf(pid) !== undefined); waited += 50)
    await new Promise((resolve) => setTimeout(resolve, 50))
  console.log(`stopped ${left.length} process(es) ${why}`)
}

/** The `npm` this process runs under (within a few parents), with its start time, if any. */
export const npmAncestor = () => {
  for (let pid = process.ppid, hops = 0; pid > 1 && hops < 4; hops++) {
    const stat = statOf(pid)
    if (stat === undefined) return undefined
    if (/^npm(\s|\0|$)|\/npm(-cli\.js)?\0/.test(read(`/proc/${pid}/cmdline`) ?? ""))
      return { pid, start: stat.start }
    pid = stat.parent
  }
  return undefined
}
