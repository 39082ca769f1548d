/**
 * The typed failure a test failpoint injects. Only tests and the `Testing` module construct
 * it; runtime code refers to its type alone, so production bundles do not carry the class.
 */
import { Schema } from "effect"

/** @internal A test failpoint that fired as a typed failure. */
export class DurableRuntimeFailpointError extends Schema.TaggedError<DurableRuntimeFailpointError>()(
  "DurableRuntimeFailpointError",
  { location: Schema.String, message: Schema.String },
) {}
