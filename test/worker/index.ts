/** The test Worker: exports every Durable Object class the workerd suites address. */
export { BenchTestObject } from "./benchObject.ts"
export { DurableThreadObject } from "./durableObject.ts"
export { LedgerTestObject } from "./ledgerObject.ts"
export { MaintenanceTestObject } from "./maintenanceObject.ts"
export { MeteredRetainedThreadObject, MeteredThreadObject } from "./meteredObject.ts"
export { PortProbeObject } from "./portProbeObject.ts"
export {
  AuthorizedThreadObject,
  MisnamedThreadObject,
  OtherThreadObject,
  RetainedThreadObject,
  TestThreadObject,
} from "./threadObject.ts"
export { TracedThreadObject } from "./tracedObject.ts"
export { WakeThreadObject } from "./wakeObject.ts"
export { UserThreadObject } from "./userObject.ts"
export { WorkflowThreadObject } from "./workflowObject.ts"

export default {
  fetch: () => new Response("effect-agent test worker"),
}
