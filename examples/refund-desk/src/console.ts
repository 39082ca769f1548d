/**
 * The operator console served at `/console`: plain HTML and a little script over the
 * Worker's JSON routes, no build step. It lists the Threads, each Thread's Submissions with
 * their state and `explain` reason, one Submission's history, the Object's obligations and
 * alarm, `verify` results, and the privileged actions (through the bearer-token routes).
 */
export const consolePage = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Refund desk · operator console</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
  body { font: 14px/1.4 system-ui, sans-serif; margin: 0; color: #1d2330; background: #f6f7f9; }
  header { background: #1d2330; color: #fff; padding: 10px 16px; display: flex; gap: 16px; align-items: center; }
  header h1 { font-size: 16px; margin: 0; flex: 1; }
  main { display: grid; grid-template-columns: 220px 1fr 360px; gap: 12px; padding: 12px; }
  section { background: #fff; border: 1px solid #d8dce3; border-radius: 6px; padding: 10px; }
  h2 { font-size: 13px; text-transform: uppercase; letter-spacing: .04em; color: #5a6272; margin: 0 0 8px; }
  table { border-collapse: collapse; width: 100%; }
  td, th { text-align: left; padding: 4px 6px; border-bottom: 1px solid #eceef2; vertical-align: top; }
  tr.selected { background: #eef4ff; }
  .state { font-weight: 600; }
  .reason { color: #3b4354; }
  .bad { color: #b42318; font-weight: 600; }
  .ok { color: #067647; font-weight: 600; }
  button { font: inherit; padding: 3px 8px; margin: 2px; cursor: pointer; }
  input { font: inherit; padding: 3px 6px; }
  pre { white-space: pre-wrap; word-break: break-all; margin: 0; font-size: 12px; }
  ul { padding-left: 18px; margin: 4px 0; }
  #threads li { cursor: pointer; }
  #threads li.selected { font-weight: 700; }
  #message { min-height: 1.4em; }
</style>
</head>
<body>
<header>
  <h1>Refund desk · operator console</h1>
  <label>Operator token <input id="token" type="password" size="22" autocomplete="off"></label>
  <button id="refresh">Refresh</button>
</header>
<main>
  <section>
    <h2>Threads</h2>
    <ul id="threads"></ul>
    <h2>New refund</h2>
    <form id="submit">
      <input id="thread" placeholder="thread" size="14" required><br>
      <input id="order" placeholder="order id" size="14" required><br>
      <input id="amount" placeholder="amount" size="8" type="number" min="1" required>
      <button type="submit">Submit</button>
    </form>
  </section>
  <section>
    <h2>Submissions of <span id="current">(none)</span></h2>
    <table><thead><tr><th>#</th><th>state</th><th>reason</th><th>actions</th></tr></thead>
    <tbody id="submissions"></tbody></table>
    <div id="message"></div>
    <h2>History of the selected submission</h2>
    <pre id="history">(select a submission)</pre>
  </section>
  <section>
    <h2>Alarm and obligations</h2>
    <div id="alarm"></div>
    <ul id="obligations"></ul>
    <h2>Verify</h2>
    <div id="verify"></div>
    <button id="repair">Repair maintenance record</button>
  </section>
</main>
<script>
const state = { thread: null, submission: null }
const $ = (id) => document.getElementById(id)
const el = (tag, text, cls) => { const e = document.createElement(tag); if (text !== undefined) e.textContent = text; if (cls) e.className = cls; return e }
$("token").value = sessionStorage.getItem("operatorToken") || ""
$("token").addEventListener("change", () => sessionStorage.setItem("operatorToken", $("token").value))
const headers = () => $("token").value ? { authorization: "Bearer " + $("token").value } : {}
async function api(method, path, body) {
  const response = await fetch(path, { method, headers: { "content-type": "application/json", ...headers() }, body: body === undefined ? undefined : JSON.stringify(body) })
  const json = await response.json().catch(() => ({}))
  if (!response.ok) throw new Error((json.error || response.status) + ": " + (json.message || ""))
  return json
}
const time = (ms) => ms === null || ms === undefined ? "none" : new Date(ms).toISOString().replace("T", " ").replace("Z", "")
function describe(reason) {
  switch (reason._tag) {
    case "Settled": return "settled " + reason.settlement.outcome + (reason.settlement.error ? ": " + reason.settlement.error : "")
    case "WaitingForApproval": return "waiting for approval since " + time(reason.since) + " " + JSON.stringify(reason.payload)
    case "QueuedBehind": return "queued behind " + reason.head.slice(0, 8) + " (" + reason.headState + ", " + reason.ahead + " ahead)"
    case "UnknownOutcome": return "unknown outcome of step " + reason.step + " \\"" + reason.name + "\\" since " + time(reason.since) + ", waiting for " + reason.waitingFor + " (reconcile " + reason.reconcile.status + ", " + reason.reconcile.started + "/" + reason.reconcile.allowed + ")"
    case "BindingWait": return "waiting for agent " + reason.agentId + ", attempt " + reason.attempts + ", next try " + time(reason.nextTryAt)
    case "LaneBackoff": return "maintenance backs off until " + time(reason.until) + " (stalls " + reason.stalls + ")"
    case "HeldByAttempt": return "held by attempt " + reason.attemptId.slice(0, 8) + ", lease ends " + time(reason.leaseExpiresAt)
    case "WaitingForAlarm": return "runnable, waiting for the alarm at " + time(reason.at) + (reason.abortRequested ? " (abort accepted)" : "")
    case "MaintenanceRecordDamaged": return "maintenance record damaged at " + reason.field + ": repair it"
    default: return reason._tag
  }
}
async function act(label, path, body) {
  try { await api("POST", path, body); $("message").textContent = label + ": done"; $("message").className = "ok" }
  catch (error) { $("message").textContent = label + ": " + error.message; $("message").className = "bad" }
  await refresh()
}
function actions(row) {
  const cell = el("td")
  const base = "/threads/" + encodeURIComponent(state.thread) + "/submissions/" + row.submissionId
  const add = (label, action, body) => { const b = el("button", label); b.dataset.action = action; b.onclick = (e) => { e.stopPropagation(); act(label, base + "/" + action, body) }; cell.append(b) }
  if (row.state === "suspended") { add("Approve", "approve", { note: "approved in the console" }); add("Deny", "deny", { note: "denied in the console" }) }
  if (row.state === "unknown") { add("Resolve: happened", "resolve", { succeeded: true, value: "resolved-by-operator" }); add("Resolve: failed", "resolve", { succeeded: false, message: "the operator reports it did not happen" }) }
  if (row.state === "running") add("Retry", "retry")
  if (row.state !== "settled") add("Abort", "abort")
  return cell
}
async function showThreads() {
  const threads = await api("GET", "/threads")
  const list = $("threads"); list.replaceChildren()
  if (state.thread === null && threads.length > 0) state.thread = threads[0]
  for (const thread of threads) {
    const item = el("li", thread, thread === state.thread ? "selected" : "")
    item.onclick = () => { state.thread = thread; state.submission = null; refresh() }
    list.append(item)
  }
}
async function showThread() {
  $("current").textContent = state.thread || "(none)"
  const body = $("submissions"); body.replaceChildren()
  if (state.thread === null) return
  const base = "/threads/" + encodeURIComponent(state.thread)
  const rows = await api("GET", base + "/submissions?limit=50")
  for (const row of rows) {
    const explained = await api("GET", base + "/submissions/" + row.submissionId + "/explain")
    const tr = el("tr", undefined, row.submissionId === state.submission ? "selected" : "")
    tr.dataset.submission = row.submissionId
    tr.dataset.state = row.state
    tr.append(el("td", String(row.queueSequence)), el("td", row.state, "state"), el("td", describe(explained.reason), "reason"), actions(row))
    tr.onclick = () => { state.submission = row.submissionId; refresh() }
    body.append(tr)
  }
  if (state.submission !== null) {
    const progress = await api("GET", base + "/submissions/" + state.submission + "/progress?timeoutMillis=0")
    $("history").textContent = progress.records.map((r) => r.sequence + "  " + time(r.recordedAt) + "  " + JSON.stringify(r.entry)).join("\\n")
  } else $("history").textContent = "(select a submission)"
  const owed = await api("GET", base + "/obligations")
  const alarm = $("alarm"); alarm.replaceChildren()
  alarm.append(el("div", "scheduled alarm: " + time(owed.scheduledAlarm)), el("div", "implied by the rules: " + time(owed.impliedAlarm)))
  alarm.dataset.scheduled = owed.scheduledAlarm === null ? "none" : "set"
  if (owed.mismatch) alarm.append(el("div", "mismatch (" + owed.mismatch.kind + "): " + owed.mismatch.message, owed.mismatch.kind === "extra" ? "" : "bad"))
  if (owed.damaged) alarm.append(el("div", "record damaged at " + owed.damaged.field, "bad"))
  const list = $("obligations"); list.replaceChildren()
  for (const o of owed.obligations) list.append(el("li", o.source + " due " + time(o.dueAt) + ": " + o.detail))
  if (owed.obligations.length === 0) list.append(el("li", "nothing owed"))
  const report = await api("GET", base + "/verify")
  const verify = $("verify"); verify.replaceChildren()
  verify.append(el("div", report.violations.length === 0 ? "no violations (" + report.submissions + " submissions, " + report.historyRecords + " records)" : report.violations.length + " violation(s)", report.violations.length === 0 ? "ok" : "bad"))
  for (const v of report.violations) verify.append(el("div", v.invariant + ": " + v.message, "bad"))
}
async function refresh() {
  try { await showThreads(); await showThread() }
  catch (error) { $("message").textContent = error.message; $("message").className = "bad" }
  document.body.dataset.refreshed = String(Date.now())
}
$("refresh").onclick = refresh
$("repair").onclick = () => state.thread && act("Repair", "/threads/" + encodeURIComponent(state.thread) + "/repair")
$("submit").onsubmit = async (event) => {
  event.preventDefault()
  state.thread = $("thread").value
  await act("Submit", "/threads/" + encodeURIComponent(state.thread) + "/submissions", { input: { orderId: $("order").value, amount: Number($("amount").value) } })
}
refresh()
setInterval(refresh, 1500)
</script>
</body>
</html>
`
