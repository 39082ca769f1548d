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
 * A memory by key, bounded in entries and in the characters of its keys (a key holds the cells,
 * so its length stands for what the entry keeps alive): past either bound, the entry set longest
 * ago is forgotten first, and a key longer than a sixteenth of the characters is not kept.
 * @internal
 */
export const boundedMemory = <A>(limit: number, characters = 4_000_000) => {
  const entries = new Map<string, A>()
  let held = 0
  return {
    get: (key: string): A | undefined => entries.get(key),
    set: (key: string, value: A): void => {
      if (key.length > characters / 16) return
      if (entries.delete(key)) held -= key.length
      entries.set(key, value)
      held += key.length
      while (entries.size > limit || held > characters) {
        const oldest = entries.keys().next()
        if (oldest.done === true) break
        entries.delete(oldest.value)
        held -= oldest.value.length
      }
    },
  }
}
