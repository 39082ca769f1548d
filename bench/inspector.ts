/**
 * A DevTools protocol session with workerd's inspector and the summary of a CPU profile, shared
 * by the profiling benches (bench/profile.ts, bench/refundDrain.ts --profile).
 */
import WebSocket from "ws"

export interface ProfileNode {
  readonly id: number
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number }
  readonly children?: ReadonlyArray<number>
}
export interface Profile {
  readonly nodes: ReadonlyArray<ProfileNode>
  readonly samples: ReadonlyArray<number>
  readonly timeDeltas: ReadonlyArray<number>
}

/** A minimal DevTools protocol session over one WebSocket. */
export const session = async (url: string) => {
  const socket = new WebSocket(url)
  await new Promise((resolve, reject) => {
    socket.once("open", resolve)
    socket.once("error", reject)
  })
  let next = 1
  const pending = new Map<number, (result: unknown) => void>()
  socket.on("message", (data) => {
    const message = JSON.parse(String(data)) as { id?: number; result?: unknown; error?: unknown }
    if (message.id !== undefined) pending.get(message.id)?.(message.error ?? message.result)
  })
  const send = <A>(method: string, params: Record<string, unknown> = {}) =>
    new Promise<A>((resolve) => {
      const id = next++
      pending.set(id, (result) => resolve(result as A))
      socket.send(JSON.stringify({ id, method, params }))
    })
  return { send, close: () => socket.close() }
}

/** Self time per function (name + location), largest first. */
export const selfTimes = (profile: Profile) => {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]))
  const totals = new Map<string, number>()
  profile.samples.forEach((id, index) => {
    const frame = byId.get(id)?.callFrame
    if (frame === undefined) return
    const file = frame.url.split("/").slice(-2).join("/")
    const key = `${frame.functionName || "(anonymous)"} ${file}:${frame.lineNumber + 1}`
    totals.set(key, (totals.get(key) ?? 0) + (profile.timeDeltas[index] ?? 0))
  })
  return [...totals.entries()].sort((a, b) => b[1] - a[1])
}

/**
 * Self time per source module of the bundled `script` the profile ran (esbuild marks where each
 * module starts with a `// path` comment line), largest first; native frames by their name.
 * Effect's fiber loop hides who called what, so a module's own time is the useful split.
 */
export const moduleTimes = (profile: Profile, script: string) => {
  const starts: Array<readonly [number, string]> = []
  script.split("\n").forEach((line, index) => {
    const module = /^\/\/ ((?:node_modules|src|examples|bench)\/\S*)$/.exec(line)?.[1]
    if (module !== undefined) starts.push([index, module])
  })
  const moduleAt = (line: number) => {
    let low = 0
    let high = starts.length - 1
    let found = "(bundle prelude)"
    while (low <= high) {
      const middle = (low + high) >> 1
      const [start, module] = starts[middle]!
      if (start <= line) {
        found = module
        low = middle + 1
      } else high = middle - 1
    }
    return found
  }
  const byId = new Map(profile.nodes.map((node) => [node.id, node]))
  const totals = new Map<string, number>()
  profile.samples.forEach((id, index) => {
    const frame = byId.get(id)?.callFrame
    if (frame === undefined) return
    const key = frame.lineNumber < 0 ? `(native) ${frame.functionName}` : moduleAt(frame.lineNumber)
    totals.set(key, (totals.get(key) ?? 0) + (profile.timeDeltas[index] ?? 0))
  })
  return [...totals.entries()].sort((a, b) => b[1] - a[1])
}

/** The inspector session of the Worker's own isolate at `port`. */
export const workerSession = async (port: number) => {
  const targets = (await (await fetch(`http://127.0.0.1:${port}/json`)).json()) as Array<{
    id: string
    webSocketDebuggerUrl: string
  }>
  return session((targets.find((target) => target.id === "core:user:") ?? targets[0]!).webSocketDebuggerUrl)
}
