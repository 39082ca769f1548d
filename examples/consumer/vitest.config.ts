import { cloudflareTest } from "@cloudflare/vitest-pool-workers"
import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    projects: [
      {
        // Inside workerd, against the test build of the Worker.
        plugins: [cloudflareTest({ wrangler: { configPath: "./test/wrangler.toml" } })],
        // One runtime serves every file (as the repository's own workerd project does): a fresh
        // runtime per file costs seconds to start and load the package each time.
        test: { name: "workerd", include: ["test/*.test.ts"], isolate: false },
      },
      {
        // From Node: Miniflare runtimes over a persist folder, and the production bundle.
        test: { name: "node", environment: "node", include: ["test/node/*.test.ts"], testTimeout: 60_000 },
      },
    ],
  },
})
