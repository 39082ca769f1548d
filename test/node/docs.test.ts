/**
 * The documentation is checked like code: the API reference in docs/api is what `npm run docs`
 * generates from the sources' TSDoc now, every export of a public module has TSDoc, and every
 * relative link and anchor of README.md and docs/ resolves.
 */
import { describe, expect, it } from "@effect/vitest"
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { API_DIR, generateApiReference } from "../../scripts/docs/apiReference.ts"
import { brokenLinks, headingIds } from "../../scripts/docs/links.ts"

const root = fileURLToPath(new URL("../../", import.meta.url))
const reference = generateApiReference(root)

describe("documentation", () => {
  it("documents every export of every public module, and every module has a header", () => {
    expect(reference.missing).toEqual([])
  })

  it("keeps the API reference in docs/api current (regenerate it with `npm run docs`)", () => {
    const committed = existsSync(`${root}${API_DIR}`) ? readdirSync(`${root}${API_DIR}`).sort() : []
    expect(committed).toEqual(
      [...reference.pages.keys()].map((path) => path.slice(API_DIR.length + 1)).sort(),
    )
    for (const [path, content] of reference.pages) {
      expect(readFileSync(`${root}${path}`, "utf8"), path).toBe(content)
    }
  })

  it("has no broken relative link or anchor in README.md and docs/", () => {
    expect(brokenLinks(root)).toEqual([])
  })

  it("derives heading anchors as GitHub does", () => {
    const ids = headingIds(
      "# Operate it: explain, obligations, verify, repair\n## `Testing` and *more*\n## Set-up\n## Set-up\n```\n# not a heading\n```\n",
    )
    expect([...ids]).toEqual([
      "operate-it-explain-obligations-verify-repair",
      "testing-and-more",
      "set-up",
      "set-up-1",
    ])
  })

  it("reports a missing file, a missing heading and an anchor into a source file, but not links in code", () => {
    const dir = mkdtempSync(join(tmpdir(), "links-"))
    mkdirSync(join(dir, "docs"))
    writeFileSync(join(dir, "docs", "guide.md"), "# Guide\n\n## Set-up\n")
    writeFileSync(join(dir, "main.ts"), "")
    writeFileSync(
      join(dir, "README.md"),
      [
        "[ok](docs/guide.md#set-up) [ok](#top) [ok](main.ts#L3) [ok](https://example.com/x.md#nope)",
        "# Top",
        "[gone](docs/missing.md) [no heading](docs/guide.md#install) [not markdown](main.ts#section)",
        "`[in code](docs/missing.md)`",
        "```md\n[in a block](docs/missing.md)\n```",
      ].join("\n"),
    )
    expect(brokenLinks(dir).map((link) => `${link.line} ${link.target}`)).toEqual([
      "3 docs/missing.md",
      "3 docs/guide.md#install",
      "3 main.ts#section",
    ])
  })
})
