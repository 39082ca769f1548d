import { cloudflareTest } from "@cloudflare/vitest-pool-workers"
import { readFileSync } from "node:fs"
import { availableParallelism } from "node:os"
import { defineConfig } from "vitest/config"

// In this repository the package's own subpaths resolve to its sources (as tsconfig.json's
// `paths` do for tsc and wrangler), not to the build that `exports` names for applications.
const { name, exports } = JSON.parse(readFileSync("./package.json", "utf8")) as {
  name: string
  exports: Record<string, { default: string } | string | null>
}
const sources = Object.entries(exports).flatMap(([subpath, target]) =>
  typeof target === "object" && target !== null
    ? [
        {
          find: new RegExp(`^${name}${subpath.slice(1)}$`),
          replacement: new URL(
            target.default.replace(/^\.\/dist\//, "./src/").replace(/\.js$/, ".ts"),
            import.meta.url,
          ).pathname,
        },
      ]
    : [],
)

// The first group's files mostly wait: on real alarms, on the workerd processes they start and
// kill. vitest's default (one worker fewer than the cores) runs them one at a time on 2 cores;
// one per core overlaps those waits.
// Every project of a group must name the same count.
const waitingWorkers = Math.max(2, availableParallelism())

export default defineConfig({
  test: {
    projects: [
      {
        plugins: [
          cloudflareTest({
            wrangler: { configPath: "./test/worker/wrangler.jsonc" },
            // `CRASH_MATRIX=full` (the soak) runs every crash point of the SQLite crash matrices.
            miniflare: { bindings: { CRASH_MATRIX: process.env["CRASH_MATRIX"] ?? "sample" } },
          }),
        ],
        test: {
          name: "workerd",
          maxWorkers: waitingWorkers,
          include: ["test/**/*.test.ts"],
          exclude: ["test/node/**", "test/example/**"],
          isolate: false,
          // These files share the machine with the node project's workerd processes: a timeout
          // is for a test that hangs, not for one the machine slowed.
          testTimeout: 20_000,
        },
      },
      {
        // The example Worker end to end, under the root wrangler config that serves it.
        // The token `wrangler dev` reads from .dev.vars, which the test pool does not read.
        plugins: [
          cloudflareTest({
            wrangler: { configPath: "./wrangler.toml" },
            // A short reminder, so a test sees it; a test's own steps finish well before it.
            miniflare: {
              bindings: { OPERATOR_TOKEN: "dev-operator-token", APPROVAL_REMINDER_MILLIS: "3000" },
            },
          }),
        ],
        resolve: { alias: sources },
        test: {
          name: "example",
          maxWorkers: waitingWorkers,
          include: ["test/example/**/*.test.ts"],
        },
      },
      {
        test: {
          name: "node-workerd",
          maxWorkers: waitingWorkers,
          environment: "node",
          include: ["test/node/*.test.ts"],
          // Each test boots workerd (twice for a restart) and waits on real alarms.
          testTimeout: 30_000,
        },
      },
      {
        // The deterministic simulation: CPU-bound shards on every core (vitest's default leaves
        // one idle). A worker count of its own needs a group of its own, after the projects
        // above, so that no shard competes with a test that waits on real time.
        test: {
          name: "node",
          environment: "node",
          include: ["test/node/sim/**/*.test.ts"],
          maxWorkers: availableParallelism(),
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
})
