import { cloudflareTest } from "@cloudflare/vitest-pool-workers"
import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    projects: [
      {
        plugins: [cloudflareTest({ wrangler: { configPath: "./test/worker/wrangler.jsonc" } })],
        test: {
          name: "workerd",
          include: ["test/**/*.test.ts"],
          exclude: ["test/node/**", "test/example/**"],
        },
      },
      {
        // The example Worker end to end, under its own wrangler config.
        plugins: [cloudflareTest({ wrangler: { configPath: "./example/wrangler.jsonc" } })],
        test: {
          name: "example",
          include: ["test/example/**/*.test.ts"],
        },
      },
      {
        test: {
          name: "node",
          environment: "node",
          include: ["test/node/**/*.test.ts"],
          // Each test boots workerd (twice for a restart) and waits on real alarms.
          testTimeout: 30_000,
        },
      },
    ],
  },
})
