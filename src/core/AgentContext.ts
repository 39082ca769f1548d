/** Placeholder replaced by the runtime helper. */
export interface AgentContext {}
