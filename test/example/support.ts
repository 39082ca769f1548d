/**
 * Drives the example Worker from inside workerd: HTTP calls through its fetch handler, and
 * alarm deliveries to a Thread's Object until a condition holds.
 */
import { env, runDurableObjectAlarm, SELF } from "cloudflare:test"

/** A unique Thread per test: storage is shared by every test of a file. */
export const threadName = (label: string) => `desk-${label}-${crypto.randomUUID()}`

/** The operator token of the example's wrangler config. */
export const operatorToken = "dev-operator-token"

/** Calls the example Worker as its operator (or as `token`) and returns the status and the JSON body. */
export const call = async (
  method: "GET" | "POST",
  path: string,
  body?: unknown,
  token: string | null = operatorToken,
) => {
  const response = await SELF.fetch(`http://example.test${path}`, {
    method,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    ...(token === null ? {} : { headers: { authorization: `Bearer ${token}` } }),
  })
  return { status: response.status, body: (await response.json()) as Record<string, any> }
}

/**
 * Delivers the alarms of the Thread's Object and of the fraud desk's Object (where refunds run
 * their fraud checks) until `done` holds, at most `rounds` times.
 */
export const deliverUntil = async (thread: string, done: () => Promise<boolean>, rounds = 50) => {
  const stubs = [env.THREADS.getByName(thread), env.THREADS.getByName("fraud-desk")]
  for (let round = 0; round < rounds; round++) {
    if (await done()) return
    // A pass may reject (workerd would redeliver); the next round delivers again.
    for (const stub of stubs) await runDurableObjectAlarm(stub).catch(() => false)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  throw new Error(`condition not reached after ${rounds} alarm deliveries`)
}

/** The state of a Submission. */
export const stateOf = async (thread: string, submissionId: string) =>
  (await call("GET", `/threads/${thread}/submissions/${submissionId}`)).body["state"] as string

/** The Thread Object's maintenance inspection view. */
export const maintenanceOf = async (thread: string) =>
  (await call("GET", `/threads/${thread}/maintenance`)).body

/**
 * Whether the Thread's Object is at rest: nothing owed and no alarm but retention's. An empty slot is not
 * enough: workerd clears a delivered alarm before its handler runs (the fraud desk's answer
 * arrives as a mutation, whose alarm fires on its own).
 */
export const quiet = async (thread: string) => {
  const maintenance = await maintenanceOf(thread)
  const alarm = maintenance["alarm"] as number | null
  // Retention's alarm (settled refunds expire after 30 days) is the only one a quiet Object keeps.
  return (alarm === null || alarm > Date.now() + 86_400_000) && maintenance["owed"] === false
}

/** Envelopes the relay inbox received for one Thread. */
export const relayedFor = async (thread: string) => {
  const { body } = await call("GET", "/relay")
  return (body as unknown as Array<{ envelope: Record<string, unknown>; deliveries: number }>).filter(
    (item) => item.envelope["threadId"] === thread,
  )
}
