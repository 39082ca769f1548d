import type { Threads } from "./worker"

declare global {
  namespace Cloudflare {
    interface Env {
      readonly THREADS: DurableObjectNamespace<Threads>
    }
  }
}
