/**
 * The README's code for applications is the consumer project's code: every block that names a
 * file of examples/consumer on its first line is that file, character for character, and the
 * files an application writes are all shown.
 */
import { describe, expect, it } from "@effect/vitest"
import { readFileSync } from "node:fs"

const root = new URL("../../", import.meta.url)
const readme = readFileSync(new URL("README.md", root), "utf8")

const quoted = [...readme.matchAll(/^```\w*\n(?:\/\/|#) (examples\/consumer\/\S+)\n([\s\S]*?)^```$/gm)].map(
  (match) => ({ path: match[1] ?? "", body: match[2] ?? "" }),
)

describe("README", () => {
  it("quotes the consumer project's files exactly", () => {
    for (const { path, body } of quoted) {
      expect(body, path).toBe(readFileSync(new URL(path, root), "utf8"))
    }
  })

  it("shows the agent, the host hook, the operator policy, the Worker, its console, its wrangler config and the failpoint test", () => {
    expect(quoted.map(({ path }) => path).sort()).toEqual(
      [
        "examples/consumer/src/agent.ts",
        "examples/consumer/src/console.ts",
        "examples/consumer/src/operator.ts",
        "examples/consumer/src/settlementLog.ts",
        "examples/consumer/src/worker.ts",
        "examples/consumer/test/failpoint.test.ts",
        "examples/consumer/test/worker.ts",
        "examples/consumer/wrangler.toml",
      ].sort(),
    )
  })
})
