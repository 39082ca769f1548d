import type { BenchTestObject } from "./worker/benchObject.ts"
import type { DurableThreadObject } from "./worker/durableObject.ts"
import type { LedgerTestObject } from "./worker/ledgerObject.ts"
import type { MaintenanceTestObject } from "./worker/maintenanceObject.ts"
import type { MeteredRetainedThreadObject, MeteredThreadObject } from "./worker/meteredObject.ts"
import type { PortProbeObject } from "./worker/portProbeObject.ts"
import type {
  AuthorizedThreadObject,
  MisnamedThreadObject,
  OtherThreadObject,
  RetainedThreadObject,
  TestThreadObject,
} from "./worker/threadObject.ts"
import type { TracedThreadObject } from "./worker/tracedObject.ts"
import type { UserThreadObject } from "./worker/userObject.ts"
import type { WakeThreadObject } from "./worker/wakeObject.ts"
import type { WorkflowThreadObject } from "./worker/workflowObject.ts"

declare global {
  namespace Cloudflare {
    interface Env {
      readonly BENCH_TEST: DurableObjectNamespace<BenchTestObject>
      readonly LEDGER_TEST: DurableObjectNamespace<LedgerTestObject>
      readonly MAINTENANCE_TEST: DurableObjectNamespace<MaintenanceTestObject>
      readonly PORT_PROBE: DurableObjectNamespace<PortProbeObject>
      readonly THREADS_TEST: DurableObjectNamespace<TestThreadObject>
      /** The library over the bench's counting storage view (the cost suite). */
      readonly THREADS_METERED: DurableObjectNamespace<MeteredThreadObject>
      readonly THREADS_METERED_RETAINED: DurableObjectNamespace<MeteredRetainedThreadObject>
      /** A second `ThreadObject` namespace: children across namespace bindings. */
      readonly THREADS_OTHER: DurableObjectNamespace<OtherThreadObject>
      /** `full` runs every crash point of the SQLite crash matrices; anything else samples them. */
      readonly CRASH_MATRIX: string
      readonly AUTHORIZED_TEST: DurableObjectNamespace<AuthorizedThreadObject>
      /** A `ThreadObject` whose spans go to an OTLP exporter. */
      readonly THREADS_TRACED: DurableObjectNamespace<TracedThreadObject>
      /** Waiters that poll once a minute: only the progress hub answers them sooner. */
      readonly THREADS_WAKE: DurableObjectNamespace<WakeThreadObject>
      /** `effect/workflow` executions, one Object per execution id. */
      readonly THREADS_WORKFLOW: DurableObjectNamespace<WorkflowThreadObject>
      /** Steps that retry, sleeps and event waits. */
      readonly THREADS_DURABLE: DurableObjectNamespace<DurableThreadObject>
      /** Delegating agents with a one-second retention. */
      readonly THREADS_RETAINED: DurableObjectNamespace<RetainedThreadObject>
      /** A `ThreadObject` whose `namespaceBinding` names no binding: its constructor fails. */
      readonly THREADS_MISNAMED: DurableObjectNamespace<MisnamedThreadObject>
      /** The agents of the new-user scenarios, with a one-second retention. */
      readonly THREADS_USER: DurableObjectNamespace<UserThreadObject>
    }
  }
}
