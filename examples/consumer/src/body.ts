import { Effect, Schema } from "effect"

/** A request body that is not JSON; nothing was asked of the Thread. */
export class BodyNotJson extends Schema.TaggedError<BodyNotJson>()("BodyNotJson", {
  message: Schema.String,
}) {}

/** The request's JSON body: an empty one reads as `{}`, one that is not JSON is refused by name. */
export const jsonBody = (request: Request): Effect.Effect<unknown, BodyNotJson> =>
  Effect.tryPromise({
    try: async () => {
      const text = await request.text()
      return text.trim() === "" ? {} : (JSON.parse(text) as unknown)
    },
    catch: (cause) =>
      new BodyNotJson({
        message: `the request body is not JSON: ${cause instanceof Error ? cause.message : String(cause)}`,
      }),
  })
