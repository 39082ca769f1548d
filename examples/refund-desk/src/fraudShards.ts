/**
 * Where the fraud desk's Threads live: one Thread per customer, spread over `fraud-desk-<n>`
 * Objects by a stable hash of the customer, so a customer's checks stay in one Thread, in order,
 * and no single Object serves every refund's check. The count comes from the optional
 * `FRAUD_DESK_SHARDS` variable (8 when absent; 1 puts every check in one Object). Changing it
 * moves customers to other Objects, so it is fixed for the life of the stored Threads.
 */

/** Shards when `FRAUD_DESK_SHARDS` is absent. */
export const DEFAULT_FRAUD_DESK_SHARDS = 8

/** The shard count a `FRAUD_DESK_SHARDS` value asks for (the default when absent or not a positive integer). */
export const fraudDeskShards = (setting: string | undefined): number => {
  const count = Number(setting ?? DEFAULT_FRAUD_DESK_SHARDS)
  return Number.isInteger(count) && count >= 1 ? count : DEFAULT_FRAUD_DESK_SHARDS
}

/** Every fraud desk Object, for the operator console. */
export const fraudDeskObjects = (shards: number): ReadonlyArray<string> =>
  Array.from({ length: shards }, (_, shard) => `fraud-desk-${shard}`)

/** The Object of a customer's fraud Thread (FNV-1a of the customer, modulo the shards). */
export const fraudDeskObjectFor = (customer: string, shards: number): string => {
  let hash = 0x811c9dc5
  for (let index = 0; index < customer.length; index++)
    hash = Math.imul(hash ^ customer.charCodeAt(index), 0x01000193) >>> 0
  return `fraud-desk-${hash % shards}`
}
