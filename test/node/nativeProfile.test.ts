/**
 * The drain bench's native profile summary (bench/nativeProfile.ts), read from `perf report`
 * text as perf writes it: each sample counted once, by where it fell.
 */
import { describe, expect, it } from "@effect/vitest"
import { formatSummary, summarizeReports } from "../../bench/nativeProfile.ts"

const own = `# Samples: 6K of event 'cpu-clock:ppp'
# Overhead  Shared Object       Symbol
    20.00%  workerd             [.] Builtins_KeyedLoadIC_Megamorphic
    10.00%  [kernel.kallsyms]   [k] iowrite16
     5.00%  [kernel.kallsyms]   [k] finish_task_switch.isra.0
    10.00%  workerd             [.] sqlite3VdbeExec
     8.00%  [JIT] tid 10192     [.] 0x0000557191fb55df
     7.00%  [JIT] tid 10192     [.] 0x0000557191f954b0
    10.00%  workerd             [.] v8::internal::Scavenger::ScavengeObject<v8::internal::CompressedHeapObjectSlot>
    10.00%  workerd             [.] v8::internal::StringTable::Data::TryStringToIndexOrLookupExisting<unsigned char>
    10.00%  workerd             [.] kj::_::Event::armDepthFirst
     5.00%  libc.so.6           [.] __memmove_avx512_unaligned_erms
     5.00%  workerd             [.] tcmalloc::tcmalloc_internal::FreeWithHooksOrPerThread
`

const inclusive = `# Samples: 6K of event 'cpu-clock:ppp'
    12.00%     0.07%  [.] fsync
    11.50%     0.00%  [k] __x64_sys_fsync
`

describe("the native profile summary", () => {
  it("puts each sample in one category, JIT code under one name, and fsync's share apart", () => {
    const summary = summarizeReports(own, inclusive)
    expect(summary.samples).toBe("6K")
    expect(
      Object.fromEntries(summary.categories.map(([name, share]) => [name, Math.round(share * 100)])),
    ).toEqual({
      "V8 builtins": 20,
      kernel: 15,
      SQLite: 10,
      "optimized JavaScript": 15,
      "garbage collection": 10,
      "V8 runtime": 10,
      "workerd and its event loop": 10,
      libc: 5,
      allocator: 5,
    })
    expect(summary.fsync).toBeCloseTo(0.115)
    expect(summary.symbols[0]).toEqual(["Builtins_KeyedLoadIC_Megamorphic", 0.2])
    expect(summary.symbols).toContainEqual(["(optimized JavaScript)", 0.15])
    const lines = formatSummary(summary)
    expect(lines).toContain("  15.0%  kernel (fsync and what it calls: 11.5%)")
  })

  it("counts shares of what it read, so a report cut short still sums to the whole", () => {
    const summary = summarizeReports(own.split("\n").slice(0, 4).join("\n"), "")
    expect(summary.categories).toEqual([
      ["V8 builtins", 20 / 30],
      ["kernel", 10 / 30],
    ])
    expect(summary.fsync).toBe(0)
  })
})
