// `npm start`: serves the example Worker of the root wrangler.toml with wrangler's embedded
// workerd and local SQLite persistence under .wrangler/state (no account, no network), after a
// short guide.
import { spawn } from "node:child_process"
import { createRequire } from "node:module"
import { dirname, join } from "node:path"

const port = process.env.PORT ?? "8787"
const base = `http://localhost:${port}`
console.log(`
effect-agent refund desk example
  submit:    curl -s -X POST ${base}/threads/desk-1/submissions -d '{"input":{"orderId":"A1","amount":40}}'
  status:    curl -s ${base}/threads/desk-1/submissions/<submissionId>
  approve:   curl -s -X POST ${base}/threads/desk-1/submissions/<submissionId>/approve \\
               -H "Authorization: Bearer dev-operator-token" -d '{"note":"ok by Sam"}'
  why:       curl -s ${base}/threads/desk-1/submissions/<submissionId>/explain
  console:   ${base}/console   (operator token: dev-operator-token)
  history:   curl -s ${base}/threads/desk-1/history
  relay:     curl -s ${base}/relay
  (see README.md, "Quick start", for the full round trip)
`)
// wrangler's own entry run by this Node, not `npx wrangler`: npx costs a third of a second of
// every start (and every restart after a crash) before wrangler even loads.
const wrangler = join(
  dirname(createRequire(import.meta.url).resolve("wrangler/package.json")),
  "bin/wrangler.js",
)
const child = spawn(process.execPath, [wrangler, "dev", "--persist-to", ".wrangler/state", "--port", port], {
  stdio: "inherit",
  env: { ...process.env, WRANGLER_SEND_METRICS: "false", CLOUDFLARE_CF_FETCH_ENABLED: "false" },
})
child.on("exit", (code) => process.exit(code ?? 0))
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => child.kill(signal))
