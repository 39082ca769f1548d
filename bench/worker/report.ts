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
