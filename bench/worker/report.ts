/** The JSON the bench Worker's subjects answer with, as Schemas shared with the Node driver. */
import { Schema } from "effect"

/** Storage work counted by the meter (bench/worker/meter.ts); KV figures count keys. */
export const MeterCounts = Schema.Struct({
  sqlStatements: Schema.Number,
  sqlRowsRead: Schema.Number,
  sqlRowsWritten: Schema.Number,
  totalChanges: Schema.Number,
  kvGets: Schema.Number,
  kvPuts: Schema.Number,
  kvDeletes: Schema.Number,
  kvLists: Schema.Number,
  alarmGets: Schema.Number,
  alarmSets: Schema.Number,
  alarmDeletes: Schema.Number,
  alarmDeliveries: Schema.Number,
})
export type MeterCounts = typeof MeterCounts.Type

/** `POST /wait` of a burst subject: items finished and the storage work they took. */
export const BurstReport = Schema.Struct({ items: Schema.Number, counts: MeterCounts })
export type BurstReport = typeof BurstReport.Type

/** `POST /wait` of the alarm loop: deliveries and workerd's clock from start to the last one. */
export const LoopReport = Schema.Struct({ deliveries: Schema.Number, elapsedMs: Schema.Number })
export type LoopReport = typeof LoopReport.Type

/** `POST /wait` of the library's Object: a burst report with its drain time and checks. */
export const ThreadBurstReport = Schema.Struct({
  items: Schema.Number,
  counts: MeterCounts,
  /** workerd's clock from the end of submission to the last settlement. */
  drainMs: Schema.Number,
  /** The library's own count of settlements reported by its passes. */
  settledCounter: Schema.Number,
  /** Nonterminal Submissions left (0 once drained). */
  nonterminal: Schema.Number,
  /** The part of `counts` spent submitting, before the first pass ran. */
  submitCounts: MeterCounts,
})
export type ThreadBurstReport = typeof ThreadBurstReport.Type

/** `POST /progress`: items settled so far. */
export const ProgressReport = Schema.Struct({ done: Schema.Number })

/** `POST /stop`: a run cut at its time cap. */
export const StopReport = Schema.Struct({ stopped: Schema.Boolean, done: Schema.Number, counts: MeterCounts })

/** `POST /pass`: one forced delivery and what its pass did. */
export const PassReport = Schema.Struct({
  counts: MeterCounts,
  wallMs: Schema.Number,
  caughtUp: Schema.Boolean,
  /** The record's nonterminal count after the pass. */
  nonterminal: Schema.Number,
  /** The alarm left scheduled after the pass, or null. */
  alarm: Schema.NullOr(Schema.Number),
})
export type PassReport = typeof PassReport.Type

/** `POST /park`: Submissions parked and the owed pass that classified them. */
export const ParkReport = Schema.Struct({ parked: Schema.Number, classify: PassReport })
export type ParkReport = typeof ParkReport.Type

/** `POST /fairness`: the most deliveries a cold lane waited behind one hot lane. */
export const FairnessReport = Schema.Struct({
  lanes: Schema.Number,
  coldSettled: Schema.Number,
  maxColdWait: Schema.Number,
  maxColdWaitMs: Schema.Number,
  hotLastDelivery: Schema.Number,
  deliveries: Schema.Number,
})

/** `POST /idle`: the alarm slot once quiescent and deliveries during a real wait. */
export const IdleReport = Schema.Struct({ alarm: Schema.NullOr(Schema.Number), deliveries: Schema.Number })

/** `POST /fanin`: Threads that each park one Submission in an approval wait. */
export const FaninReport = Schema.Struct({
  /** Approval requests that exist at the end (one per Thread). */
  requested: Schema.Number,
  /** From the first submit to the moment every approval request existed. */
  seconds: Schema.Number,
  /** Of which submitting took this long. */
  submitSeconds: Schema.Number,
  /** Alarm deliveries until every approval request existed. */
  deliveries: Schema.Number,
  /** Alarm deliveries that started after every approval request existed, in the idle window too. */
  deliveriesAfter: Schema.Number,
  /** The alarm slot once quiescent, or null. */
  alarm: Schema.NullOr(Schema.Number),
})
export type FaninReport = typeof FaninReport.Type

/** `POST /sustain`: one chunk of a sustained run and the database once it drained. */
export const SustainReport = Schema.Struct({
  items: Schema.Number,
  /** workerd's clock from the first submit to the last settlement. */
  ms: Schema.Number,
  counts: MeterCounts,
  /** Ledger rows when the call came, before its Submissions. */
  rowsBefore: Schema.Number,
  /** Rows read and written by the statements only retention runs, since the previous call. */
  pruneRowsRead: Schema.Number,
  pruneRowsWritten: Schema.Number,
  databaseBytes: Schema.Number,
  /** Ledger rows left (settled ones retention has not removed yet included). */
  rows: Schema.Number,
})
export type SustainReport = typeof SustainReport.Type

/** Storage calls of the event-cost Worker's Object, by method (bench/worker/eventCost.ts). */
export const EventCostCalls = Schema.Struct({
  exec: Schema.Number,
  transactionSync: Schema.Number,
  getAlarm: Schema.Number,
  setAlarm: Schema.Number,
  deleteAlarm: Schema.Number,
  kvGet: Schema.Number,
  kvPut: Schema.Number,
})

/** What one loop of the event-cost Worker did. */
export const EventCostReport = Schema.Struct({
  submissions: Schema.Int,
  deliveries: Schema.Int,
  calls: EventCostCalls,
})
export type EventCostReport = typeof EventCostReport.Type
