/**
 * The example Worker's operator console in a real headless browser (a Chromium shipped inside
 * the `@sparticuz/chromium` npm package, driven by `puppeteer-core`): the Worker runs in
 * workerd through Miniflare on a local port, the page submits a refund that needs approval,
 * shows it waiting with its reason, approves it through the bearer-token route, and shows it
 * settled with the alarm cleared. A screenshot of each state lands in
 * `test-output/console/`.
 */
import chromium from "@sparticuz/chromium"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { Miniflare } from "miniflare"
import { mkdir } from "node:fs/promises"
import { fileURLToPath } from "node:url"
import puppeteer, { type Page } from "puppeteer-core"
import { bundleWorker } from "./support/bundle.ts"
import { tempDir } from "./support/tempDir.ts"

const screenshots = fileURLToPath(new URL("../../test-output/console/", import.meta.url))
const operatorToken = "console-test-token"

/** The example Worker on a free local port; the scope disposes it. */
const exampleWorker = Effect.gen(function* () {
  const script = yield* bundleWorker(new URL("../../examples/refund-desk/src/worker.ts", import.meta.url))
  const persist = yield* tempDir("console")
  const mf = yield* Effect.acquireRelease(
    Effect.promise(async () => {
      const instance = new Miniflare({
        modules: true,
        script,
        compatibilityDate: "2026-04-20",
        compatibilityFlags: ["nodejs_compat"],
        host: "127.0.0.1",
        port: 0,
        durableObjects: Object.fromEntries(
          Object.entries({
            THREADS: "Threads",
            RELAY: "RelayInbox",
            PAYMENTS: "Payments",
            DIRECTORY: "ThreadDirectory",
          }).map(([binding, className]) => [binding, { className, useSQLite: true }]),
        ),
        durableObjectsPersist: persist,
        bindings: { OPERATOR_TOKEN: operatorToken },
      })
      await instance.ready
      return instance
    }),
    (instance) => Effect.promise(() => instance.dispose()),
  )
  return yield* Effect.promise(() => mf.ready)
})

const browserPage = Effect.gen(function* () {
  const browser = yield* Effect.acquireRelease(
    Effect.promise(async () =>
      puppeteer.launch({
        args: chromium.args,
        executablePath: await chromium.executablePath(),
        headless: true,
        defaultViewport: { width: 1400, height: 820 },
      }),
    ),
    (browser) => Effect.promise(() => browser.close()),
  )
  return yield* Effect.promise(() => browser.newPage())
})

/** Waits until `predicate` holds in the page (the console refreshes itself every 1.5 s). */
const waitInPage = (page: Page, what: string, predicate: string) =>
  Effect.tryPromise({
    try: () => page.waitForFunction(predicate, { timeout: 30_000, polling: 100 }),
    catch: () => new Error(`the console never showed ${what}`),
  }).pipe(Effect.orDie)

const shoot = (page: Page, name: string) =>
  Effect.promise(() => page.screenshot({ path: `${screenshots}${name}.png`, fullPage: true }))

const rowText = (page: Page) =>
  Effect.promise(() =>
    page.$$eval("#submissions tr", (rows) =>
      rows.map((row) => (row as unknown as { innerText: string }).innerText),
    ),
  )

describe("operator console", () => {
  it.live(
    "shows a refund waiting for approval with its reason, approves it in the page, and shows it settled with the alarm cleared",
    () =>
      Effect.gen(function* () {
        yield* Effect.promise(() => mkdir(screenshots, { recursive: true }))
        const url = yield* exampleWorker
        const page = yield* browserPage
        yield* Effect.promise(() => page.goto(new URL("/console", url).href, { waitUntil: "load" }))
        expect(yield* Effect.promise(() => page.title())).toBe("Refund desk · operator console")
        yield* Effect.promise(async () => {
          await page.type("#token", operatorToken)
          await page.$eval("#token", (input) => {
            ;(input as unknown as { dispatchEvent: (event: unknown) => void }).dispatchEvent(
              new (globalThis as unknown as { Event: new (type: string) => unknown }).Event("change"),
            )
          })
          await page.type("#thread", "desk-console")
          await page.type("#order", "B2")
          await page.type("#amount", "140")
        })
        yield* shoot(page, "01-console-before-submit")
        yield* Effect.promise(() => page.click("#submit button[type=submit]"))

        yield* waitInPage(
          page,
          "the refund waiting for approval",
          `[...document.querySelectorAll("#submissions tr")].some((row) => row.dataset.state === "suspended" && row.innerText.includes("waiting for approval since"))`,
        )
        yield* waitInPage(
          page,
          "the quiet alarm",
          `document.getElementById("alarm").dataset.scheduled === "none"`,
        )
        const waiting = (yield* rowText(page)).join("\n")
        expect(waiting).toContain('"orderId":"B2"')
        expect(waiting).toContain('"amount":140')
        yield* shoot(page, "02-waiting-for-approval")

        yield* Effect.promise(() =>
          page.click("#submissions tr[data-state=suspended] button[data-action=approve]"),
        )
        yield* waitInPage(
          page,
          "the refund settled",
          `[...document.querySelectorAll("#submissions tr")].some((row) => row.dataset.state === "settled" && row.innerText.includes("settled completed"))`,
        )
        yield* waitInPage(
          page,
          "the alarm cleared",
          `document.getElementById("alarm").dataset.scheduled === "none"`,
        )
        // Select the Submission to show its history next to the cleared alarm.
        yield* Effect.promise(() => page.click("#submissions tr[data-state=settled]"))
        yield* waitInPage(
          page,
          "its history",
          `document.getElementById("history").innerText.includes("SubmissionSettled")`,
        )
        const history = yield* Effect.promise(() =>
          page.$eval("#history", (node) => (node as unknown as { innerText: string }).innerText),
        )
        expect(history).toContain("ApprovalResolved")
        expect(history).toContain("refund-B2-14000")
        expect(
          yield* Effect.promise(() =>
            page.$eval("#verify", (node) => (node as unknown as { innerText: string }).innerText),
          ),
        ).toContain("no violations")
        expect(
          yield* Effect.promise(() =>
            page.$eval("#message", (node) => (node as unknown as { innerText: string }).innerText),
          ),
        ).toBe("Approve: done")
        yield* shoot(page, "03-settled-alarm-cleared")
      }),
    120_000,
  )
})
