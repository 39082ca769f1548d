import { cloudflareTest } from "@cloudflare/vitest-pool-workers"
import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    projects: [
      {
        // Inside workerd, against the test build of the Worker.
        plugins: [cloudflareTest({ wrangler: { configPath: "./test/wrangler.toml" } })],
        test: { name: "workerd", include: ["test/*.test.ts"] },
      },
      {
        // From Node: Miniflare runtimes over a persist folder, and the production bundle.
        test: { name: "node", environment: "node", include: ["test/node/*.test.ts"], testTimeout: 60_000 },
      },
    ],
  },
})
