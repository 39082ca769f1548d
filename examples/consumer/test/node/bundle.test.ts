import { readFile } from "node:fs/promises"
import { gzipSync } from "node:zlib"
import { describe, expect, it } from "vitest"
import { bundle } from "./localWorker"

describe("the production bundle", () => {
  it("carries the Thread Object and none of the test-only surface", async () => {
    const code = await readFile(await bundle("wrangler.toml"))
    const text = code.toString("utf8")
    console.log(`worker.js: ${code.length} bytes, ${gzipSync(code).length} bytes gzipped`)
    expect(text).toContain("ThreadMaintenance.pass")
    // The storage instrumentation, the failpoint switchboard, the location lists, the
    // injected-failure error and the alarm helper are in `Testing`, which the production Worker
    // does not import.
    for (const testOnly of [
      "storage:transaction:before",
      "instrumentState",
      "makeSwitchboard",
      "THREAD_MAINTENANCE_FAILPOINT_LOCATIONS",
      "RUNTIME_FAILPOINT_LOCATIONS",
      "DurableRuntimeFailpointError",
      "AlarmsNotQuiet",
    ]) {
      expect(text, testOnly).not.toContain(testOnly)
    }
  })
})
