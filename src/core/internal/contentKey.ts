/**
 * A key naming stored cells exactly, for memories of what a pure decode made of them: two lists
 * of cells have the same key only if every cell has the same type and value (a NULL is not the
 * text "null", the number 1 not the text "1"). `undefined` when a cell is of another kind (a
 * blob), which such a memory then does not keep.
 * @internal
 */
export const contentKey = (cells: ReadonlyArray<unknown>): string | undefined => {
  let key = ""
  for (const cell of cells) {
    if (cell === null) key += "\u0001"
    else if (typeof cell === "string") key += `s${cell.length}:${cell}`
    else if (typeof cell === "number") key += `n${cell};`
    else return undefined
  }
  return key
}

/**
 * A bounded memory by key; past its limit, the entry set longest ago is forgotten first.
 * @internal
 */
export const boundedMemory = <A>(limit: number) => {
  const entries = new Map<string, A>()
  return {
    get: (key: string): A | undefined => entries.get(key),
    set: (key: string, value: A): void => {
      entries.delete(key)
      entries.set(key, value)
      if (entries.size > limit) {
        const oldest = entries.keys().next()
        if (oldest.done !== true) entries.delete(oldest.value)
      }
    },
  }
}
