/**
 * Whether the store held nothing (no table, no key) when this incarnation began to build. A
 * record written on such a store starts clean: the bootstrap's dirty generation is for stores
 * older than the record, and on an empty one its pass would find nothing, one alarm write and
 * one billed delivery for each new Object.
 *
 * Internal on purpose: `ThreadObject` provides it to `ThreadMaintenance.ensureAlarm` only, from
 * its check under the input gate just before the first build; everything else sees the
 * default, "not fresh", and so the bootstrap record.
 */
import { Context } from "effect"

/** @internal */
export const FreshStore = Context.Reference<boolean>("@effect-agent/platform-cloudflare/Alarm/FreshStore", {
  defaultValue: () => false,
})
