/**
 * The bench Worker: exports every subject class and routes `/<BINDING>/<object name>/<route>`
 * to that Object's `fetch`. Add a subject by exporting its class here and naming its binding in
 * bench/subjects.ts.
 */
export { AlarmLoopObject } from "./alarmLoopObject.ts"
export { BaselineObject } from "./baselineObject.ts"
export { LatencyRawObject, LatencyThreadObject } from "./latency.ts"
export {
  ThreadBenchDefaultObject,
  ThreadBenchMultiObject,
  ThreadBenchObject,
  ThreadBenchRetentionObject,
} from "./threadSubject.ts"
export { TimerBenchObject } from "./timerSubject.ts"
import { json } from "./burst.ts"

export default {
  fetch: (request: Request, env: Record<string, unknown>): Promise<Response> | Response => {
    const url = new URL(request.url)
    const [, binding = "", name = "", ...route] = url.pathname.split("/")
    const namespace = env[binding] as DurableObjectNamespace | undefined
    if (namespace === undefined || name === "") return json({ error: `no Object at ${url.pathname}` }, 404)
    return namespace.getByName(name).fetch(new Request(`http://object/${route.join("/")}`, request))
  },
} satisfies ExportedHandler<Record<string, unknown>>
