/**
 * The package an application installs: every public module is a subpath with a build and
 * declarations, the repository resolves the same subpaths to their sources, and the tarball
 * ships the build, the sources its maps point at, the README and the licence.
 */
import { describe, expect, it } from "@effect/vitest"
import { readFileSync } from "node:fs"

const readJson = (path: string) =>
  JSON.parse(readFileSync(new URL(`../../${path}`, import.meta.url), "utf8")) as Record<string, any>

const manifest = readJson("package.json")
const modules = Object.entries(manifest["exports"] as Record<string, unknown>).flatMap(([subpath, target]) =>
  typeof target === "object" && target !== null
    ? [{ subpath, ...(target as { types: string; default: string }) }]
    : [],
)
const sourceOf = (built: string) => built.replace(/^\.\/dist\//, "./src/").replace(/\.js$/, ".ts")

describe("package", () => {
  it("exports every public module with declarations and JavaScript from one build path", () => {
    for (const module of modules) {
      expect(module.types, module.subpath).toBe(module.default.replace(/\.js$/, ".d.ts"))
      expect(module.subpath === "." || /^\.\/[A-Z][A-Za-z]+$/.test(module.subpath), module.subpath).toBe(true)
      expect(() => readFileSync(new URL(`../../${sourceOf(module.default)}`, import.meta.url))).not.toThrow()
    }
    expect(manifest["exports"]["./internal/*"]).toBeNull()
  })

  it("resolves each subpath to its source inside the repository, as tsconfig paths", () => {
    const paths = readJson("tsconfig.json")["compilerOptions"]["paths"] as Record<string, Array<string>>
    const expected = Object.fromEntries(
      modules.map((module) => [`${manifest["name"]}${module.subpath.slice(1)}`, [sourceOf(module.default)]]),
    )
    expect(paths).toEqual(expected)
  })

  it("names every public module but Testing in the root barrel", () => {
    const barrel = readFileSync(new URL("../../src/index.ts", import.meta.url), "utf8")
    const namespaces = [...barrel.matchAll(/^export \* as (\w+) from/gm)].map((match) => match[1])
    const subpaths = modules.map((module) => module.subpath.slice(2)).filter((name) => name !== "")
    expect(namespaces.sort()).toEqual(subpaths.filter((name) => name !== "Testing").sort())
  })

  it("ships the build, the sources, the README and the licence; effect is its only (peer) dependency", () => {
    expect(manifest["files"]).toEqual(["dist", "src", "README.md", "LICENSE"])
    expect(readFileSync(new URL("../../LICENSE", import.meta.url), "utf8")).toContain("MIT License")
    expect(manifest["peerDependencies"]).toEqual({ effect: `^${manifest["devDependencies"]["effect"]}` })
    // No runtime dependency at all: effect is the peer, everything else is the package's own.
    expect(manifest["dependencies"]).toBeUndefined()
  })
})
