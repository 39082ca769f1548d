import * as Testing from "@effect-agent/platform-cloudflare/Testing"
import * as ThreadObject from "@effect-agent/platform-cloudflare/ThreadObject"
import { operatorsOnly } from "../src/operator"
import { Support } from "../src/worker"

export { default } from "../src/worker"

/** Failpoints a test installs on one Object by its id (the test and the Object share the isolate). */
export const failpoints = Testing.makeSwitchboard()

/** The application's own Thread layer and policy, with failpoints and a short lease for killed Attempts. */
export class Threads extends ThreadObject.make(Support, {
  authorization: operatorsOnly,
  config: { ownershipLeaseDuration: 500 },
  failpoints,
}) {}
