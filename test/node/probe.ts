/** How the Node-side suites run the probe Worker (fixtures/probeWorker.ts). */
import type { WorkerSpec } from "./support/localWorker.ts"

/** The probe Worker over `persistDir`, reporting alarm deliveries to `signalUrl`. */
export const probeSpec = (persistDir: string, signalUrl: string): WorkerSpec => ({
  entry: new URL("./fixtures/probeWorker.ts", import.meta.url),
  durableObjects: { PROBE: "ProbeObject" },
  persistDir,
  bindings: { SIGNAL_URL: signalUrl },
})

/** The path of a probe route addressed to the Object `name`. */
export const probePath = (route: string, name: string, query: Record<string, string> = {}): string =>
  `${route}?${new URLSearchParams({ ...query, name }).toString()}`
