/**
 * `@effect-agent/platform-cloudflare`: durable agent Threads inside Cloudflare Durable Objects.
 * Each public module is also a subpath export of the package; test-only surface is in the
 * `Testing` subpath, which this barrel leaves out.
 */
export * as AgentContext from "./core/AgentContext.ts"
export * as AgentEvent from "./core/AgentEvent.ts"
export * as AgentRegistration from "./core/AgentRegistration.ts"
export * as Alarm from "./Alarm.ts"
export * as CloudflareBindings from "./CloudflareBindings.ts"
export * as CloudflareConfig from "./CloudflareConfig.ts"
export * as DurableAgentRuntime from "./core/DurableAgentRuntime.ts"
export * as DurableRuntimeConfig from "./core/DurableRuntimeConfig.ts"
export * as Identifiers from "./core/Identifiers.ts"
export * as MessageOutbox from "./core/MessageOutbox.ts"
export * as Retention from "./core/Retention.ts"
export * as RoutedPort from "./RoutedPort.ts"
export * as SubmissionLedger from "./core/SubmissionLedger.ts"
export * as ThreadClient from "./ThreadClient.ts"
export * as ThreadConsole from "./ThreadConsole.ts"
export * as ThreadHistory from "./core/ThreadHistory.ts"
export * as ThreadObject from "./ThreadObject.ts"
export * as ThreadProjectionMaintenance from "./core/ThreadProjectionMaintenance.ts"
export * as ThreadWorkflowEngine from "./ThreadWorkflowEngine.ts"
export * as WakeScheduler from "./core/WakeScheduler.ts"
