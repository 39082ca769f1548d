/**
 * A `ThreadObject` whose waiters poll only once a minute: an answer sooner than that can only
 * come from the progress hub's wake.
 */
import * as ThreadObject from "../../src/ThreadObject.ts"
import { bulkyAgent, echoAgent, reviewAgent } from "./threadObject.ts"

/** The poll interval of `WakeThreadObject`, longer than any wait its tests allow. */
export const wakePollMillis = 60_000

export class WakeThreadObject extends ThreadObject.make(
  ThreadObject.layer([echoAgent, reviewAgent, bulkyAgent]),
  {
    config: { settlementPollInterval: wakePollMillis },
  },
) {}
