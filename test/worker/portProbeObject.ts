/**
 * A Durable Object that answers `portCall` with whatever a test scripted for it, so the
 * Cloudflare `RoutedPort` is exercised through real namespace bindings and stubs.
 */
import { DurableObject } from "cloudflare:workers"

/** What the probe does with the next call: answer with an envelope, or throw. */
export type ProbeAnswer =
  | { readonly _tag: "Envelope"; readonly result: unknown }
  | { readonly _tag: "Throw"; readonly message: string }

export class PortProbeObject extends DurableObject {
  #answer: ProbeAnswer = { _tag: "Throw", message: "no answer scripted" }
  readonly #received: Array<unknown> = []

  script(answer: ProbeAnswer): void {
    this.#answer = answer
  }

  received(): ReadonlyArray<unknown> {
    return this.#received
  }

  portCall(envelope: unknown): unknown {
    this.#received.push(envelope)
    if (this.#answer._tag === "Throw") throw new Error(this.#answer.message)
    return this.#answer.result
  }
}
