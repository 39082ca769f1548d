/**
 * The console page's script and stylesheet as the Worker serves them: the generated module is
 * the build of the page's sources as they are now, and no source turns a string into markup,
 * so a stored value can only ever show as text.
 */
import { describe, expect, it } from "@effect/vitest"
import { readdirSync, readFileSync } from "node:fs"
import { ASSETS_MODULE, consoleAssets, SCRIPT_ORDER } from "../../scripts/consoleAssets.ts"
import { pathSegment, segmentValue } from "../../src/internal/console/browser/refs.js"

const BROWSER = new URL("../../src/internal/console/browser/", import.meta.url)

describe("console assets", () => {
  it("are the build of the page's sources (run `npm run console:assets` after changing one)", async () => {
    expect(readFileSync(ASSETS_MODULE, "utf8")).toBe(await consoleAssets())
  })

  it("join every module of the page", () => {
    const modules = readdirSync(BROWSER).filter((file) => file.endsWith(".js"))
    expect([...SCRIPT_ORDER].sort()).toEqual(modules.sort())
  })

  it("never parse a value as HTML, evaluate code or set an inline style", () => {
    for (const file of SCRIPT_ORDER) {
      const source = readFileSync(new URL(file, BROWSER), "utf8")
      expect(source, file).not.toMatch(
        /innerHTML|outerHTML|insertAdjacentHTML|document\.write|createContextualFragment|\beval\(|new Function|setAttribute\("style"|cssText/,
      )
    }
  })

  // The Worker reads a segment by the same rule (`segmentValue` in routes.ts), which
  // test/ThreadConsole.test.ts checks through the mounted console.
  it("write a path segment that URLs keep and that reads back, `.` and `..` included", () => {
    for (const value of [".", "..", "...", "$.", "$..", "$", "a/b", "50%", "why?", "%2E%2E", "#x", "é 1"]) {
      const segment = pathSegment(value)
      // A URL keeps the segment as written: nothing removed, nothing re-encoded.
      expect(new URL(`https://h/api/${segment}/x`).pathname, value).toBe(`/api/${segment}/x`)
      expect(segmentValue(segment), value).toBe(value)
    }
    // Ordinary values keep the paths they had: plain percent-encoding.
    for (const value of ["review-1", "tenant:acme:1", "a b"])
      expect(pathSegment(value)).toBe(encodeURIComponent(value))
  })
})
