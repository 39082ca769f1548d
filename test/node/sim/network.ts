/**
 * The simulated network between the Objects of a cluster: each Object's `RoutedPort` reaches
 * the others' `portCall` entry points. By the run's seed the network delays a request or its
 * reply, duplicates a request (a second delivery some time later, whose reply nobody reads),
 * drops a request or a reply (the sender's attempt timeout takes over), and so reorders
 * whatever is in flight. An address that names no Object is unreachable.
 */
import { Effect, Scope } from "effect"
import type { PortEnvelope, PortFailure, PortReply, RoutedPort } from "../../../src/RoutedPort.ts"
import { PortUnreachable } from "../../../src/RoutedPort.ts"
import type { Rng } from "./random.ts"

/** The faults of one run's network. */
export interface NetworkFaults {
  readonly drop: number
  readonly duplicate: number
  readonly delay: number
  describe(): string
  /** Stops injecting: the run is converging. */
  calm(): void
  readonly calmed: boolean
}

/** A run's network faults, drawn from `rng`. */
export const makeNetworkFaults = (rng: Rng): NetworkFaults => {
  const rates = rng.pick([
    { drop: 0, duplicate: 0, delay: 0 },
    { drop: 0.05, duplicate: 0.05, delay: 0.3 },
    { drop: 0.15, duplicate: 0.15, delay: 0.5 },
    { drop: 0.3, duplicate: 0.2, delay: 0.8 },
  ])
  let calmed = false
  return {
    get drop() {
      return calmed ? 0 : rates.drop
    },
    get duplicate() {
      return calmed ? 0 : rates.duplicate
    },
    get delay() {
      return calmed ? 0 : rates.delay
    },
    describe: () => `network drop ${rates.drop}, duplicate ${rates.duplicate}, delay ${rates.delay}`,
    calm: () => {
      calmed = true
    },
    get calmed() {
      return calmed
    },
  }
}

/** What the network needs of each Object. */
export interface Reachable {
  readonly portCall: (envelope: PortEnvelope) => Effect.Effect<PortReply, PortFailure>
}

/** Statistics of the network. */
export interface NetworkStats {
  sent: number
  dropped: number
  duplicated: number
  /** Duplicates on their way: they still arrive later. */
  inFlight: number
}

/** The network of a cluster: `portOf(name)` is how the Object `name` reaches the others. */
export const makeNetwork = (options: {
  readonly rng: Rng
  readonly faults: NetworkFaults
  readonly objects: ReadonlyMap<string, Reachable>
  readonly scope: Scope.Scope
  readonly trace: (line: string) => void
}) => {
  const { rng, faults } = options
  const stats: NetworkStats = { sent: 0, dropped: 0, duplicated: 0, inFlight: 0 }
  const latency = () => (rng.chance(faults.delay) ? rng.pick([1, 10, 100, 1_000, 5_000]) : 0)
  const pause = (millis: number) => (millis === 0 ? Effect.void : Effect.sleep(millis))

  const portOf = (from: string): RoutedPort["Service"] => ({
    call: (address, envelope) =>
      Effect.gen(function* () {
        const name = address.objectName ?? address.objectId ?? ""
        const target = options.objects.get(name)
        if (target === undefined) {
          return yield* new PortUnreachable({ message: `no Object ${name} in ${address.namespace}` })
        }
        stats.sent++
        const label = `${from} -> ${name} ${envelope.request._tag} ${envelope.messageId}`
        if (rng.chance(faults.duplicate)) {
          stats.duplicated++
          const later = latency() + rng.int(1, 2_000)
          options.trace(`  net duplicate ${label} in ${later} ms`)
          stats.inFlight++
          yield* Effect.forkIn(
            Effect.andThen(pause(later), target.portCall(envelope)).pipe(
              Effect.ignore,
              Effect.ensuring(Effect.sync(() => void stats.inFlight--)),
            ),
            options.scope,
          )
        }
        if (rng.chance(faults.drop)) {
          stats.dropped++
          options.trace(`  net drop request ${label}`)
          return yield* Effect.never
        }
        yield* pause(latency())
        const reply = yield* target.portCall(envelope)
        if (rng.chance(faults.drop)) {
          stats.dropped++
          options.trace(`  net drop reply ${label}`)
          return yield* Effect.never
        }
        yield* pause(latency())
        return reply
      }),
  })

  return { portOf, stats }
}
