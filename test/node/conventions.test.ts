/**
 * Conventions read from the sources, so that drift fails here rather than waiting for a
 * reviewer: how services and Schemas are identified, how constants and duration fields are
 * spelled, and which way imports run between the package's floors (public modules,
 * `internal/`, and the host-free `core/`). Every allow-list says why its entries stay, and an
 * entry that no longer occurs fails too, so the lists only shrink.
 */
import { describe, expect, it } from "@effect/vitest"
import { readFileSync } from "node:fs"
import {
  cyclesOf,
  fieldsOf,
  identifiersOf,
  literalConstantsOf,
  readSources,
  type SourceModule,
} from "./support/sources.ts"

const modules = readSources()
const byPath = new Map(modules.map((module) => [module.path, module]))

const manifest = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as {
  readonly exports: Record<string, unknown>
}
/** The public modules' names, as applications import them (`DurableAgentRuntime`). */
const publicModules = new Set(
  Object.entries(manifest.exports).flatMap(([subpath, target]) =>
    typeof target === "object" && target !== null && subpath !== "." ? [subpath.slice(2)] : [],
  ),
)

/**
 * The original's keys, spelled as it spelled them (maintenance spec §3.8, §4.1, §6.3). None is
 * stored: Schema encodes a class as its fields alone, and a service key lives in memory, so
 * renaming any other identifier changes no stored data.
 */
const KEPT_IDS: Record<string, string> = {
  "@effect-agent/platform-cloudflare/internal/ThreadMutationGate": "the mutation gate's service key",
  "@effect-agent/thread/ThreadProjectionMaintenance":
    "the projection hook's key in the original's core package",
  BindingRetry: "the original's identifier of a maintenance record's binding retry",
  MaintenanceRetry: "the original's identifier of a maintenance record's retry",
}

const ID = /^@effect-agent\/platform-cloudflare\/([A-Z][A-Za-z0-9]*)(?:\/([A-Z][A-Za-z0-9]*))?$/

const SCREAMING_SNAKE_CASE = /^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*$/

/** A field or constant named for a span of time, which must then say its unit. */
const DURATION_FIELD =
  /[a-z0-9](?:Interval|Duration|Timeout|Delay|Ttl|Period|Backoff(?:Base|Cap)?|Retry(?:Base|Cap))$/
const BARE_DURATION_FIELD = /^(?:interval|duration|timeout|delay|ttl|period|backoff)$/
const DURATION_CONSTANT = /_(?:INTERVAL|DURATION|TIMEOUT|DELAY|TTL|PERIOD|BACKOFF)$/

/**
 * The original's beta.96 names, which applications configure by: the runtime settings and the
 * Cloudflare maintenance timing (maintenance spec §5.11, §6.5). Fields of our own end in `Millis`.
 */
const KEPT_DURATION_FIELDS = new Set([
  "ownershipLeaseDuration",
  "leaseRenewalInterval",
  "settlementPollInterval",
  "abortPollInterval",
  "alarmBackoffBase",
  "alarmBackoffCap",
  "wakeScanInterval",
])

/** Import cycles among modules that other work is reshaping now. None is left. */
const KNOWN_CYCLES: Record<string, string> = {}

/**
 * A public module owns its service, so `internal/` may read a tag from one that stands on its
 * own (`CloudflareBindings`, `CloudflareConfig`); a public module that is itself built on
 * `internal/` would make the floors run in a circle: `internal/` then takes its tag or layer
 * as an argument from the public module that composes it (as `ThreadObject` hands `RoutedPort`
 * to the Object's layers). None is left.
 */
const KNOWN_UPWARD_IMPORTS: Record<string, string> = {}

const isInternal = (path: string) => path.startsWith("internal/") || path.includes("/internal/")
const isTopPublic = (path: string) => !path.includes("/")

/** Fails on every allow-listed entry that no longer occurs. */
const expectAllOccur = (listed: Iterable<string>, occurring: Iterable<string>, list: string) => {
  const seen = new Set(occurring)
  expect(
    [...listed].filter((entry) => !seen.has(entry)),
    `${list}: remove entries that no longer occur`,
  ).toEqual([])
}

describe("conventions", () => {
  it("reads every module and its imports", () => {
    expect(modules.length).toBeGreaterThan(100)
    expect(byPath.get("core/DurableAgentRuntime.ts")?.imports).toContainEqual({
      to: "core/internal/runtime/make.ts",
      typeOnly: false,
    })
  })

  it("identifies services, references and Schema classes as @effect-agent/platform-cloudflare/<Module>[/<Name>]", () => {
    const ids = modules.flatMap(identifiersOf)
    expect(ids.length).toBeGreaterThan(40)
    const drift = ids.filter(({ name }) => {
      if (name in KEPT_IDS) return false
      const match = ID.exec(name)
      // A two-part id names the public module that exports it.
      return match === null || (match[2] !== undefined && !publicModules.has(match[1] ?? ""))
    })
    expect(drift).toEqual([])
    expectAllOccur(
      Object.keys(KEPT_IDS),
      ids.map(({ name }) => name),
      "KEPT_IDS",
    )
  })

  it("spells module-level literal constants in SCREAMING_SNAKE_CASE", () => {
    const constants = modules.flatMap(literalConstantsOf)
    expect(constants.map(({ name }) => name)).toContain("MAX_IDENTIFIER_LENGTH")
    expect(constants.filter(({ name }) => !SCREAMING_SNAKE_CASE.test(name))).toEqual([])
  })

  it("ends our own duration fields and constants in Millis", () => {
    const fields = modules.flatMap(fieldsOf)
    const drift = fields.filter(
      ({ name, numeric }) =>
        !KEPT_DURATION_FIELDS.has(name) &&
        (DURATION_FIELD.test(name) || (numeric && BARE_DURATION_FIELD.test(name))),
    )
    expect(drift).toEqual([])
    const constants = modules.flatMap(literalConstantsOf)
    expect(constants.filter(({ name }) => DURATION_CONSTANT.test(name))).toEqual([])
    expectAllOccur(
      KEPT_DURATION_FIELDS,
      fields.map(({ name }) => name),
      "KEPT_DURATION_FIELDS",
    )
  })

  it("keeps core free of imports from outside core", () => {
    const upward = modules.flatMap((module) =>
      module.path.startsWith("core/")
        ? module.imports
            .filter((edge) => !edge.to.startsWith("core/"))
            .map((edge) => `${module.path} -> ${edge.to}`)
        : [],
    )
    expect(upward).toEqual([])
  })

  it("has no import cycle that runs code, and none at all among internal modules", () => {
    // A public module and its implementation may name each other's types (the service's shape,
    // the implementation's constructor); code never loads in a circle.
    const valueCycles = cyclesOf(modules, (_, edge) => !edge.typeOnly)
    const internalCycles = cyclesOf(
      modules.filter((module) => isInternal(module.path)),
      () => true,
    )
    const cycles = [...new Set([...valueCycles, ...internalCycles].map((cycle) => cycle.join(" ")))]
    expect(cycles.filter((cycle) => !(cycle in KNOWN_CYCLES))).toEqual([])
    expectAllOccur(Object.keys(KNOWN_CYCLES), cycles, "KNOWN_CYCLES")
  })

  it("imports a public module from internal/ by value only when that module imports nothing from internal/", () => {
    const importsInternal = (module: SourceModule) =>
      module.imports.some((edge) => !edge.typeOnly && isInternal(edge.to))
    const upward = modules.flatMap((module) =>
      isInternal(module.path) && !module.path.startsWith("core/")
        ? module.imports
            .filter((edge) => {
              const target = byPath.get(edge.to)
              return !edge.typeOnly && target !== undefined && isTopPublic(edge.to) && importsInternal(target)
            })
            .map((edge) => `${module.path} -> ${edge.to}`)
        : [],
    )
    expect(upward.filter((edge) => !(edge in KNOWN_UPWARD_IMPORTS))).toEqual([])
    expectAllOccur(Object.keys(KNOWN_UPWARD_IMPORTS), upward, "KNOWN_UPWARD_IMPORTS")
  })
})
