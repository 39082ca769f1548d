import * as ThreadConsole from "@effect-agent/platform-cloudflare/ThreadConsole"
import app, { type Env } from "./worker"

export { Threads } from "./worker"

/**
 * The Worker with the operator console at /console, every other path the application's. The
 * console calls the Objects as the browser's caller (the operator token it sends as a bearer
 * token), so `operatorsOnly` decides what it may do, as for any other caller.
 */
export default {
  fetch(request, env) {
    const operatorConsole = ThreadConsole.handler({
      namespace: env.THREADS,
      namespaceBinding: "THREADS",
      basePath: "/console",
      // The Objects its front page lists; any other opens by name.
      objects: () => ["support"],
    })
    return operatorConsole.matches(request) ? operatorConsole(request) : app.fetch(request, env)
  },
} satisfies ExportedHandler<Env>
