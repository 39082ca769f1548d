// Loaded into wrangler's Node processes by `npm start` (`--import`): when the process that started
// one is gone (`kill -9` of start.mjs or of wrangler's launcher alone), it stops what it started
// and ends, so no server is left serving, and holding the port, with nothing to stop it. Linux
// only (it reads /proc).
import { descendants } from "./processes.mjs"

const parent = process.ppid
setInterval(() => {
  // An orphan is adopted by init or a subreaper: its parent changes.
  if (process.ppid === parent) return
  for (const { pid } of descendants(process.pid)) {
    try {
      process.kill(pid, "SIGKILL")
    } catch {
      // Already gone.
    }
  }
  process.exit(1)
}, 250).unref()
