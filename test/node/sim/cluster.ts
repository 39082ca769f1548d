/**
 * Several simulated Objects sharing one virtual clock and one faulty network: each has its own
 * storage, incarnations, alarm scheduler and invariant monitor; the network carries the routed
 * requests of their delivery drivers. The cluster settles them together and checks what spans
 * Objects: every child is linked to a parent that started it, each child's settlement is
 * applied to its parent at most once and says what the child's ledger says, and a child
 * finalizes only once its parent acknowledged it.
 */
import { Effect } from "effect"
import type { SubmissionSnapshot } from "../../../src/core/SubmissionLedger.ts"
import type { FaultPlan } from "./faults.ts"
import { readRecord } from "./invariants.ts"
import { makeNetwork, type NetworkFaults } from "./network.ts"
import { openWaits } from "./oracle.ts"
import type { Rng } from "./random.ts"
import { makeWorld, settleAll, type World, type WorldOptions } from "./world.ts"

/** What a cluster is made of. */
export interface ClusterOptions {
  readonly names: ReadonlyArray<string>
  readonly config: WorldOptions["config"]
  readonly faults: FaultPlan
  readonly network: NetworkFaults
  readonly rng: Rng
  readonly trace: (line: string) => void
  readonly verbose?: boolean
}

/** Builds the cluster of one run; everything it forks lives in the caller's scope. */
export const makeCluster = (options: ClusterOptions) =>
  Effect.gen(function* () {
    const activity = { count: 0 }
    const scope = yield* Effect.scope
    const objects = new Map<string, World>()
    const network = makeNetwork({
      rng: options.rng,
      faults: options.network,
      objects,
      scope,
      trace: options.trace,
    })
    const single = options.names.length === 1
    for (const name of options.names) {
      const world = yield* makeWorld({
        config: options.config,
        faults: options.faults,
        trace: single ? options.trace : (line) => options.trace(`[${name}]${line}`),
        verbose: options.verbose ?? false,
        name,
        port: network.portOf(name),
        activity,
      })
      objects.set(name, world)
    }
    const worlds = [...objects.values()]
    const settle = settleAll(
      activity,
      worlds.map((world) => world.closeDead),
    )

    /** Every row of every Object, with the Object it lives in. */
    const rows = () =>
      worlds.flatMap((world) => [...world.store.rows.values()].map((row) => ({ world, row })))

    const entriesOf = (world: World, row: SubmissionSnapshot) =>
      (world.store.historyBySubmission.get(row.submissionId) ?? []).map((record) => record.entry)

    /** An Object at rest: no alarm, nothing owed, no handler, no call in flight. */
    const quiet = (world: World) => {
      const record = readRecord(world.storage)
      return (
        world.storage.alarm === null &&
        world.storage.run === undefined &&
        world.inFlight.size === 0 &&
        (record === undefined || record.dirty === record.processed)
      )
    }

    /** Whether retention removed a Submission of `world`. */
    const removedByRetention = (world: World, submissionId: string) =>
      world.store.removed.size > 0 &&
      world.store.historyFeed.some(
        (record) => record.submissionId === submissionId && world.store.removed.has(record),
      )

    /** The cross-Object invariants, after every step; `check` is the first Object's monitor. */
    const checkLinks = () => {
      const check = (worlds[0] as World).monitor.check
      for (const { world, row } of rows()) {
        const link = row.parent
        if (link === undefined) continue
        const name = `${world.name}/${row.submissionId}`
        // No child without a parent that journaled its start.
        const parentWorld = objects.get(link.address.objectId ?? "")
        const parent = parentWorld?.store.rows.get(link.submissionId)
        // A settled parent in another Object does not wait for its children: retention may have
        // removed it (its records are held out of every read, as the SQLite ledger deletes them).
        if (
          parent === undefined &&
          parentWorld !== undefined &&
          removedByRetention(parentWorld, link.submissionId)
        )
          continue
        const started =
          parentWorld === undefined || parent === undefined
            ? undefined
            : entriesOf(parentWorld, parent).find(
                (entry) => entry._tag === "ChildStarted" && entry.step === link.step,
              )
        check(
          "child-linked",
          started?._tag === "ChildStarted" && started.idempotencyKey === row.idempotencyKey,
          () => `child ${name} names parent ${link.submissionId}#${link.step}, which never started it`,
        )
        if (parentWorld === undefined || parent === undefined) continue
        const applied = entriesOf(parentWorld, parent).filter(
          (entry) => entry._tag === "ChildSettled" && entry.step === link.step,
        )
        check(
          "marker-once",
          applied.length <= 1,
          () => `child ${name} settled into its parent ${applied.length} times`,
        )
        const marker = applied[0]
        if (marker?._tag === "ChildSettled" && row.settlement !== undefined) {
          check(
            "marker-matches",
            marker.outcome === row.settlement.outcome &&
              JSON.stringify(marker.output) === JSON.stringify(row.settlement.output),
            () => `parent saw ${marker.outcome} for child ${name}, which settled ${row.settlement?.outcome}`,
          )
        }
        if (marker !== undefined && row.settlement === undefined) {
          check("marker-matches", false, () => `parent saw a settlement of child ${name} before it settled`)
        }
        // Once the parent's Object is at rest, no parent still waits on a child that settled.
        if (applied.length === 1 && parent.state === "suspended" && quiet(parentWorld)) {
          const open = openWaits(entriesOf(parentWorld, parent))
          check(
            "no-parent-waits-on-settled-child",
            open.approval || open.child || parent.abortRequested,
            () =>
              `parent ${link.submissionId} is parked at rest with nothing open, its child ${name} settled`,
          )
        }
      }
    }

    /** Cross-Object checks of the quiescent end. */
    const checkLinksAtEnd = () => {
      const check = (worlds[0] as World).monitor.check
      for (const { world, row } of rows()) {
        const link = row.parent
        if (link === undefined) continue
        const parentWorld = objects.get(link.address.objectId ?? "")
        const parent = parentWorld?.store.rows.get(link.submissionId)
        if (parentWorld === undefined || parent?.settlement === undefined) continue
        // A parent that did not abort waited for this child: it saw its settlement exactly once.
        if (parent.settlement.outcome === "aborted") continue
        const applied = entriesOf(parentWorld, parent).filter(
          (entry) => entry._tag === "ChildSettled" && entry.step === link.step,
        )
        check(
          "end-marker",
          applied.length === 1,
          () => `child ${world.name}/${row.submissionId} settled into its parent ${applied.length} times`,
        )
      }
      for (const world of worlds) {
        const pending = [...world.store.outbox.values()].filter(
          (message) => message.acknowledgedAt === undefined,
        )
        check(
          "end-outbox",
          pending.length === 0,
          () => `${world.name} still owes ${pending.map((message) => message.messageId).join(", ")}`,
        )
      }
    }

    return {
      objects,
      worlds,
      network,
      settle,
      checkLinks,
      checkLinksAtEnd,
      /** The earliest alarm of any Object, and its Object. */
      nextAlarm: () =>
        worlds.reduce<{ readonly world: World; readonly at: number } | undefined>((earliest, world) => {
          const at = world.storage.alarm
          return at === null || (earliest !== undefined && earliest.at <= at) ? earliest : { world, at }
        }, undefined),
    }
  })

/** The cluster of one run. */
export type Cluster = Effect.Success<ReturnType<typeof makeCluster>>
