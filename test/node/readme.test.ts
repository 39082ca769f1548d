/**
 * The guide's code for applications is the consumer project's code: every block of README.md or
 * docs/ that names a file of examples/consumer on its first line is that file, character for
 * character, and the files an application writes are all shown where a reader looks for them.
 */
import { describe, expect, it } from "@effect/vitest"
import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { documentationFiles } from "../../scripts/docs/links.ts"

const root = fileURLToPath(new URL("../../", import.meta.url))

const quoted = documentationFiles(root).flatMap((page) =>
  [
    ...readFileSync(`${root}${page}`, "utf8").matchAll(
      /^```\w*\n(?:\/\/|#) (examples\/consumer\/\S+)\n([\s\S]*?)^```$/gm,
    ),
  ].map((match) => ({ page, path: match[1] ?? "", body: match[2] ?? "" })),
)

const shownIn = (page: string) =>
  quoted
    .filter((block) => block.page === page)
    .map((block) => block.path)
    .sort()

describe("README and docs", () => {
  it("quote the consumer project's files exactly", () => {
    expect(quoted.length).toBeGreaterThan(0)
    for (const { page, path, body } of quoted) {
      expect(body, `${page}: ${path}`).toBe(readFileSync(`${root}${path}`, "utf8"))
    }
  })

  it("show the agents, the Worker, its wrangler config and local vars, the console and the failpoint test in the README", () => {
    expect(shownIn("README.md")).toEqual(
      [
        "examples/consumer/.dev.vars",
        "examples/consumer/src/agent.ts",
        "examples/consumer/src/courier.ts",
        "examples/consumer/src/console.ts",
        "examples/consumer/src/worker.ts",
        "examples/consumer/test/failpoint.test.ts",
        "examples/consumer/wrangler.toml",
      ].sort(),
    )
  })

  it("show the test build, its vitest config and env type in the testing guide, the policy, the approval route, the host hook and the workflow in theirs", () => {
    expect(shownIn("docs/testing.md")).toEqual(
      [
        "examples/consumer/test/env.d.ts",
        "examples/consumer/test/tsconfig.json",
        "examples/consumer/test/worker.ts",
        "examples/consumer/test/wrangler.toml",
        "examples/consumer/vitest.config.ts",
      ].sort(),
    )
    expect(shownIn("docs/operating.md")).toEqual(["examples/consumer/src/operator.ts"])
    expect(shownIn("docs/agents.md")).toEqual([
      "examples/consumer/src/approval.ts",
      "examples/consumer/src/body.ts",
      "examples/consumer/src/routes.ts",
    ])
    expect(shownIn("docs/hooks.md")).toEqual(["examples/consumer/src/settlementLog.ts"])
    expect(shownIn("docs/workflows.md")).toEqual(["examples/consumer/src/workflow.ts"])
  })

  it("show every file that a shown file of the application imports", () => {
    const shown = new Set(quoted.map((block) => block.path))
    for (const { path, body } of quoted.filter((block) => block.path.startsWith("examples/consumer/src/"))) {
      for (const [, name] of body.matchAll(/from "\.\/(\w+)"/g))
        expect(shown.has(`examples/consumer/src/${name}.ts`), `${path} imports ./${name}`).toBe(true)
    }
  })
})
