import type { RelayInbox } from "./relayInbox.ts"
import type { Threads } from "./worker.ts"

declare global {
  namespace Cloudflare {
    interface Env {
      readonly THREADS: DurableObjectNamespace<Threads>
      readonly RELAY: DurableObjectNamespace<RelayInbox>
    }
  }
}
