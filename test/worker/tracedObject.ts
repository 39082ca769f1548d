/**
 * A `ThreadObject` whose spans go to Effect's OTLP trace exporter, as docs/observability.md
 * shows; the exporter's HTTP client keeps each request body here instead of sending it (the
 * test and the Object share the isolate).
 */
import { Effect, Layer } from "effect"
import { HttpClient, HttpClientResponse } from "effect/http"
import { OtlpSerialization, OtlpTracer } from "effect/observability"
import * as ThreadObject from "../../src/ThreadObject.ts"
import { echoAgent } from "./threadObject.ts"

/** The OTLP/JSON bodies the traced Object exported, oldest first. */
export const exportedTraces: Array<unknown> = []

const collector = Layer.succeed(
  HttpClient.HttpClient,
  HttpClient.make((request) =>
    Effect.sync(() => {
      if (request.body._tag === "Uint8Array") {
        exportedTraces.push(JSON.parse(new TextDecoder().decode(request.body.body)))
      }
      return HttpClientResponse.fromWeb(request, new Response("{}", { status: 200 }))
    }),
  ),
)

const Tracing = OtlpTracer.layer({
  url: "http://collector.test/v1/traces",
  resource: { serviceName: "threads-test" },
  exportInterval: "20 millis",
}).pipe(Layer.provide(OtlpSerialization.layerJson), Layer.provide(collector))

/** The echo agent, traced. */
export class TracedThreadObject extends ThreadObject.make(
  ThreadObject.layer([echoAgent]).pipe(Layer.provideMerge(Tracing)),
) {}
