/**
 * The operator console (`ThreadConsole`, mounted by the refund desk at `/console`) in a real
 * headless browser: a Chromium shipped inside the `@sparticuz/chromium` npm package, driven by
 * `puppeteer-core`, against the refund desk Worker in workerd through Miniflare on a local
 * port. One browser and one page serve every case: a refund through its child, approval and
 * settlement on the timeline; a child link to the fraud desk's Object and back; an action
 * refused without a token; an injection payload shown as text; paging through 10,000
 * Submissions; a live update without reload. The page runs under the console's strict
 * Content-Security-Policy, and any violation fails the run. Screenshots land in
 * `test-output/console/`.
 */
import chromium from "@sparticuz/chromium"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Miniflare } from "miniflare"
import { mkdir, mkdtemp, rm } from "node:fs/promises"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import puppeteer, { type Browser, type Page } from "puppeteer-core"
import { Effect } from "effect"
import { DEFAULT_FRAUD_DESK_SHARDS, fraudDeskObjectFor } from "../../examples/refund-desk/src/fraudShards.ts"
import { bundleWorker } from "./support/bundle.ts"
import { tempRoot } from "./support/tempDir.ts"

const screenshots = fileURLToPath(new URL("../../test-output/console/", import.meta.url))
const operatorToken = "console-test-token"
const WIDE = { width: 1280, height: 900 }

let mf: Miniflare
let persist: string
let browser: Browser
let page: Page
let base: URL

/** A JSON request to the Worker from Node (through Miniflare, not a socket). */
const http = async (method: "GET" | "POST", path: string, body?: unknown, token?: string) => {
  const response = await mf.dispatchFetch(new URL(path, base).href, {
    method,
    headers: {
      "content-type": "application/json",
      origin: base.origin,
      ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  })
  return { status: response.status, body: (await response.json()) as any }
}

/** Submits a refund to a desk Thread (in its own Object) and returns its Submission id. */
const refund = async (thread: string, orderId: string, amount: number) => {
  const answer = await http("POST", `/threads/${encodeURIComponent(thread)}/submissions`, {
    input: { orderId, amount },
  })
  expect(answer.status).toBe(200)
  return answer.body.submissionId as string
}

/** Polls the Worker until `done` holds (alarms run on their own in Miniflare). */
const until = async (what: string, done: () => Promise<boolean>) => {
  for (let round = 0; round < 300; round++) {
    if (await done()) return
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error(`never saw ${what}`)
}

/** A refund's state while it waits for approval: `waiting`, its reminder due in an hour. */
const parkedForApproval = "waiting"

const stateOf = async (thread: string, submissionId: string) =>
  (await http("GET", `/threads/${encodeURIComponent(thread)}/submissions/${submissionId}`)).body
    .state as string

/** Waits until `predicate` holds in the page. */
const inPage = async (what: string, predicate: string, timeout = 30_000) => {
  try {
    await page.waitForFunction(predicate, { timeout, polling: 100 })
  } catch {
    const shown = await page.evaluate(
      () => (globalThis as unknown as { document: { body: { innerText: string } } }).document.body.innerText,
    )
    throw new Error(`the console never showed ${what}; it shows:\n${shown.slice(0, 2_000)}`)
  }
}

const text = (selector: string) =>
  page.$eval(selector, (node) => (node as unknown as { innerText: string }).innerText)

const open = async (route: string) => {
  await page.evaluate((hash) => {
    ;(globalThis as unknown as { location: { hash: string } }).location.hash = hash
  }, route)
}

const submissionRoute = (object: string, thread: string, id: string) =>
  `#/o/${encodeURIComponent(object)}/t/${encodeURIComponent(thread)}/s/${encodeURIComponent(id)}`

const shoot = (name: string, fullPage = true) =>
  page.screenshot({ path: `${screenshots}${name}.png`, fullPage })

/** Types the operator token into the page's credential field (or clears it). */
const setToken = async (token: string) => {
  await page.$eval("#token", (input) => {
    ;(input as unknown as { value: string }).value = ""
  })
  if (token !== "") await page.type("#token", token)
  else
    await page.$eval("#token", (input) => {
      const { Event } = globalThis as unknown as { Event: new (type: string) => unknown }
      ;(input as unknown as { dispatchEvent: (event: unknown) => void }).dispatchEvent(new Event("input"))
    })
}

/** Takes a Submission action in the page: its button, then the confirmation (by keyboard). */
const takeAction = async (action: string, fields: Record<string, string> = {}) => {
  await page.focus(`button[data-action="${action}"]`)
  await page.keyboard.press("Enter")
  await inPage("the confirmation", `document.getElementById("confirm").open === true`)
  for (const [name, value] of Object.entries(fields)) await page.type(`#field-${name}`, value)
  await page.focus("#confirm-ok")
  await page.keyboard.press("Enter")
  await inPage("the action's answer", `document.getElementById("notice").textContent !== ""`)
  return text("#notice")
}

/** The CSP violations and script errors the page reported so far. */
const problems = () =>
  page.evaluate(() => (globalThis as unknown as { __problems: Array<string> }).__problems ?? [])

beforeAll(async () => {
  await mkdir(screenshots, { recursive: true })
  await mkdir(tempRoot, { recursive: true })
  persist = await mkdtemp(join(tempRoot, "console-"))
  const script = await Effect.runPromise(bundleWorker(new URL("./fixtures/consoleDesk.ts", import.meta.url)))
  mf = new Miniflare({
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
  base = new URL("/console/", await mf.ready)
  browser = await puppeteer.launch({
    args: chromium.args,
    executablePath: await chromium.executablePath(),
    headless: true,
    defaultViewport: WIDE,
  })
  page = await browser.newPage()
  // Every CSP violation and uncaught error of the page, for the last case to check.
  await page.evaluateOnNewDocument(() => {
    const scope = globalThis as unknown as {
      __problems: Array<string>
      addEventListener: (type: string, listener: (event: Record<string, string>) => void) => void
    }
    scope.__problems = []
    scope.addEventListener("securitypolicyviolation", (event) =>
      scope.__problems.push(`CSP ${event["violatedDirective"]}`),
    )
    scope.addEventListener("error", (event) => scope.__problems.push(`error ${event["message"]}`))
  })
  await page.goto(base.href, { waitUntil: "load" })
}, 120_000)

afterAll(async () => {
  await browser?.close()
  await mf?.dispose()
  if (persist !== undefined) await rm(persist, { recursive: true, force: true })
})

describe("operator console in a browser", () => {
  it("shows a refund through its child, approval and settlement on the timeline", async () => {
    const thread = "desk-timeline"
    const id = await refund(thread, "B2", 140)
    await until(
      "the refund waiting for approval",
      async () => (await stateOf(thread, id)) === parkedForApproval,
    )
    expect(await page.title()).toBe("Refund desk · operator console")

    // The front page lists the desk's Object with its count; its Thread lists the refund,
    // waiting for approval.
    await open("#/")
    await inPage(
      "the Object's count",
      `document.querySelector('#objects [data-object="${thread}"]')?.textContent.endsWith("1 unsettled")`,
    )
    await inPage(
      "the Objects",
      `[...document.querySelectorAll("#objects a")].some((a) => a.textContent === "${thread}")`,
    )
    await open(`#/o/${thread}/t/${thread}`)
    await inPage(
      "the refund in the list",
      `document.querySelector('#submissions tr[data-waiting="approval"]') !== null`,
    )
    await page.click('#submissions tr[data-waiting="approval"] a')
    await inPage("the Submission", `document.querySelector('#submission[data-waiting="approval"]') !== null`)
    const waiting = await text("#submission")
    expect(waiting).toContain("waiting for approval since")
    expect(waiting).toMatch(/child fraud-check at step \d/)
    expect(waiting).toContain("settled completed")
    expect(waiting).toContain("approval at step")
    expect(waiting).toMatch(/so far/)
    await shoot("01-waiting-for-approval")

    await setToken(operatorToken)
    expect(await takeAction("approve", { note: "ok by Sam" })).toBe("Approve: done")
    await inPage("the settlement", `document.querySelector('#submission[data-state="settled"]') !== null`)
    const settled = await text(".timeline")
    expect(settled).toContain("approved: ok by Sam")
    expect(settled).toMatch(/step \d · issue refund \(uncertain\)/)
    expect(settled).toContain('result "refund-B2-14000"')
    expect(settled).toContain("settled completed")
    await shoot("02-refund-timeline")
    // The raw records are one click away.
    await page.click("#raw summary")
    expect(await text("#raw")).toContain('"_tag": "ApprovalResolved"')

    // At a phone's width the same page reads without sideways scrolling.
    await page.setViewport({ width: 390, height: 844 })
    expect(
      await page.evaluate(() => {
        const root = (
          globalThis as unknown as {
            document: { documentElement: { scrollWidth: number; clientWidth: number } }
          }
        ).document.documentElement
        return root.scrollWidth <= root.clientWidth + 1
      }),
    ).toBe(true)
    await shoot("03-refund-timeline-narrow")
    await page.setViewport(WIDE)

    // The Object: its Thread with counts, the one alarm it keeps (retention's: the desk keeps
    // settled refunds 30 days) matching what the rules imply, and verify.
    await open(`#/o/${thread}`)
    await inPage(
      "the Object's Threads",
      `document.querySelector('#threads tr[data-thread="${thread}"]') !== null`,
    )
    await inPage(
      "retention's alarm, as the rules imply",
      `document.querySelector('#obligations [data-scheduled="set"]') !== null &&
        document.getElementById("obligations").innerText.includes("settled submissions expire") &&
        !document.getElementById("obligations").innerText.includes("alarm late") &&
        !document.getElementById("obligations").innerText.includes("alarm missing") &&
        !document.getElementById("obligations").innerText.includes("alarm extra")`,
    )
    await page.click("#run-verify")
    await inPage("verify", `document.getElementById("verify").innerText.includes("no violations")`)
    await shoot("04-object")
  }, 120_000)

  it("follows a child link to the fraud desk's Object and back to the parent", async () => {
    const thread = "desk-timeline"
    const id = (await http("GET", `/threads/${thread}/submissions`)).body[0].submissionId as string
    const parent = submissionRoute(thread, thread, id)
    await open(parent)
    await inPage("the refund", `document.querySelector('#submission[data-state="settled"]') !== null`)
    await page.click('.timeline li[data-kind="child"] .notes a')
    await inPage(
      "the child in its own Object",
      `location.hash.startsWith("#/o/${fraudDeskObjectFor("customer-of-B2", DEFAULT_FRAUD_DESK_SHARDS)}/t/customer-of-B2/s/") && document.querySelector("#submission")?.dataset.agent === "fraud-check"`,
    )
    const child = await text("#submission")
    expect(child).toContain("accepted for fraud-check")
    expect(child).toContain("step 0 · score")
    await page.click('.timeline li[data-kind="mark"] .notes a')
    await inPage(
      "the parent again",
      `location.hash.startsWith("#/i/") && document.querySelector("#submission")?.dataset.submission === ${JSON.stringify(id)}`,
    )
  }, 60_000)

  it("shows the typed error when an action is refused without a token", async () => {
    const thread = "desk-refused"
    const id = await refund(thread, "C3", 150)
    await until(
      "the refund waiting for approval",
      async () => (await stateOf(thread, id)) === parkedForApproval,
    )
    await open(submissionRoute(thread, thread, id))
    await inPage("the Submission", `document.querySelector('#submission[data-waiting="approval"]') !== null`)
    await setToken("")
    const answer = await takeAction("approve")
    expect(answer).toContain("Approve refused: Unauthorized: resolveApproval is an operator action")
    expect(
      await page.$eval(
        "#notice",
        (node) => (node as unknown as { dataset: Record<string, string> }).dataset["error"],
      ),
    ).toBe("Unauthorized")
    expect(await stateOf(thread, id)).toBe(parkedForApproval)
    // Cancelling a confirmation sends nothing.
    await setToken(operatorToken)
    await page.click('button[data-action="abort"]')
    await page.click("#confirm-cancel")
    expect(await stateOf(thread, id)).toBe(parkedForApproval)
  }, 60_000)

  it("updates a Submission live, without a reload, when it moves", async () => {
    const thread = "desk-refused"
    const id = (await http("GET", `/threads/${thread}/submissions`)).body[0].submissionId as string
    await open(submissionRoute(thread, thread, id))
    await inPage(
      "the waiting Submission",
      `document.querySelector('#submission[data-waiting="approval"]') !== null`,
    )
    await page.evaluate(() => {
      ;(globalThis as unknown as { __sameDocument: boolean }).__sameDocument = true
    })
    // Approved from elsewhere: the page's long poll sees the Submission move.
    const approved = await http(
      "POST",
      `/console/api/objects/${thread}/threads/${thread}/submissions/${id}/actions/approve`,
      { fields: { note: "approved from the API" } },
      operatorToken,
    )
    expect(approved.status).toBe(200)
    await inPage(
      "the live settlement",
      `document.querySelector('#submission[data-state="settled"]') !== null`,
    )
    expect(await text(".timeline")).toContain("approved: approved from the API")
    expect(
      await page.evaluate(() => (globalThis as unknown as { __sameDocument?: boolean }).__sameDocument),
    ).toBe(true)
    expect(await text("#live")).toMatch(/settled: nothing more will change|updated/)
  }, 60_000)

  it("renders an injection payload as text", async () => {
    const payload = `<script>globalThis.__pwned=1</script>"><img src=x onerror="globalThis.__pwned=2">`
    const thread = `desk-${payload}`
    const id = await refund(thread, payload, 40)
    await until("the refund settled", async () => (await stateOf(thread, id)) === "settled")
    await open("#/")
    await inPage(
      "the Objects",
      `[...document.querySelectorAll("#objects a")].some((a) => a.textContent === ${JSON.stringify(thread)})`,
    )
    await open(submissionRoute(thread, thread, id))
    await inPage("the Submission", `document.querySelector('#submission[data-state="settled"]') !== null`)
    expect(await text("h2 .name")).toBe(id)
    expect(await text(".timeline")).toContain(`"orderId":${JSON.stringify(payload)}`.slice(0, 60))
    expect(await text("#crumbs")).toContain(`Thread ${thread}`)
    expect(await page.$$eval("img", (images) => images.length)).toBe(0)
    expect(await page.$$eval("script", (scripts) => scripts.length)).toBe(1)
    expect(await page.evaluate(() => (globalThis as unknown as { __pwned?: number }).__pwned)).toBeUndefined()
  }, 60_000)

  it("pages through 10,000 Submissions of one Object", async () => {
    const object = "desk-bulk"
    expect((await http("POST", "/test/bulk", { object, thread: object, count: 10_000 })).status).toBe(200)
    // Every Submission, once each, in pages of 100 read from the console's JSON.
    const seen = new Set<string>()
    let cursor: number | undefined
    let pages = 0
    do {
      const query = `limit=100${cursor === undefined ? "" : `&cursor=${cursor}`}`
      const answer = await http(
        "GET",
        `/console/api/objects/${object}/threads/${object}/submissions?${query}`,
      )
      expect(answer.status).toBe(200)
      for (const { submission } of answer.body.submissions) seen.add(submission.submissionId)
      cursor = answer.body.next
      pages++
    } while (cursor !== undefined)
    expect(seen.size).toBe(10_000)
    expect(pages).toBe(100)

    await open(`#/o/${object}/t/${object}`)
    await inPage(
      "the first page",
      `document.querySelector('#submissions [data-page="1"][data-rows="50"]') !== null`,
    )
    expect(await text("#submissions .page-info")).toContain("newest first")
    await page.click('#submissions button[data-pager="Next page"]')
    await inPage(
      "the second page",
      `document.querySelector('#submissions [data-page="2"][data-rows="50"]') !== null`,
    )
    const second = await page.$$eval("#submissions tbody tr", (rows) =>
      rows.map((row) => row.firstElementChild?.textContent),
    )
    expect(second[0]).toBe("9950")
    await page.evaluate(() =>
      (globalThis as unknown as { scrollTo: (x: number, y: number) => void }).scrollTo(0, 0),
    )
    await shoot("05-submissions-page-2", false)

    // A filter that only the oldest matches: each answer reads one window of the Thread, and the
    // page reads on through the empty windows to it.
    await page.type("#filter-agent", "audit")
    await page.click('#filters button[type="submit"]')
    await inPage(
      "the needle",
      `document.querySelector('#submissions [data-page="1"][data-rows="1"]') !== null`,
    )
    expect(await text("#submissions tbody")).toContain("audit")
    await shoot("06-paging-filtered")

    // The first page still follows new Submissions once it read through empty windows: a new
    // match at the top shows at its next refresh.
    expect(
      (await http("POST", "/test/bulk", { object, thread: object, count: 1, from: 10_000, agent: "audit" }))
        .status,
    ).toBe(200)
    await inPage(
      "the new match on the first page",
      `document.querySelector('#submissions [data-page="1"] tbody tr td')?.textContent === "10001"`,
    )
    expect(await problems()).toEqual([])
  }, 180_000)
})
