/**
 * The console's own errors, answered like the Object's typed errors (a JSON body with the tag
 * and a message): a request it cannot read, a path it does not serve, an action whose call
 * the Objects of this release do not have, and a failure of the application's list of Objects.
 */
import { Schema } from "effect"

/** A query parameter, path segment, action field or origin the console refused; nothing was called. */
export class InvalidConsoleRequest extends Schema.TaggedError<InvalidConsoleRequest>()(
  "InvalidConsoleRequest",
  { message: Schema.String },
) {}

/** No console route answers this method and path. */
export class ConsoleRouteNotFound extends Schema.TaggedError<ConsoleRouteNotFound>()("ConsoleRouteNotFound", {
  message: Schema.String,
}) {}

/** The action is listed but its call is not in this release's Objects yet; nothing was called. */
export class ConsoleActionUnavailable extends Schema.TaggedError<ConsoleActionUnavailable>()(
  "ConsoleActionUnavailable",
  { action: Schema.String, message: Schema.String },
) {}

/** The application's list of Objects (the `objects` option) failed. */
export class ObjectDirectoryFailed extends Schema.TaggedError<ObjectDirectoryFailed>()(
  "ObjectDirectoryFailed",
  {
    message: Schema.String,
  },
) {}
