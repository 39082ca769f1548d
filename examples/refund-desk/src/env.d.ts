import type { ThreadDirectory } from "./directory.ts"
import type { Payments } from "./payments.ts"
import type { RelayInbox } from "./relayInbox.ts"
import type { Threads } from "./worker.ts"

declare global {
  namespace Cloudflare {
    interface Env {
      readonly THREADS: DurableObjectNamespace<Threads>
      readonly RELAY: DurableObjectNamespace<RelayInbox>
      readonly PAYMENTS: DurableObjectNamespace<Payments>
      readonly DIRECTORY: DurableObjectNamespace<ThreadDirectory>
      /** Where retention archives settled Submissions before removing them. */
      readonly ARCHIVE: R2Bucket
      /** The operator routes' bearer token (a secret in production; `.dev.vars` locally). */
      readonly OPERATOR_TOKEN?: string
      /** Milliseconds an approval waits before the approvers are reminded (default one hour). */
      readonly APPROVAL_REMINDER_MILLIS?: string
    }
  }
}
