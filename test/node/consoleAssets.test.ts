/**
 * The console page's script and stylesheet as the Worker serves them: the generated module is
 * the build of the page's sources as they are now, and no source turns a string into markup,
 * so a stored value can only ever show as text.
 */
import { describe, expect, it } from "@effect/vitest"
import { readdirSync, readFileSync } from "node:fs"
import { ASSETS_MODULE, consoleAssets, SCRIPT_ORDER } from "../../scripts/consoleAssets.ts"

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
})
