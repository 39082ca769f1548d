import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Stream } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { AgentId, ThreadId } from "../../src/core/Identifiers.ts"
import { sqlClientLayer } from "../../src/internal/object/sqlClient.ts"
import { runMigrations } from "../../src/core/internal/migrations.ts"
import { laneKey, statements } from "../../src/core/internal/ledger/sqlStatements.ts"
import { rowStatements } from "../../src/core/internal/history/sqlRows.ts"
import { pageStatements } from "../../src/core/internal/ledger/sqlPages.ts"
import { META_TABLE, storeMigrations, SUBMISSIONS_TABLE } from "../../src/core/internal/schema.ts"
import { COUNT_CAP, PAGE_WINDOW, SubmissionLedger } from "../../src/core/SubmissionLedger.ts"
import { ledgerConformance } from "./ledgerConformance.ts"
import { layerWithLedger } from "../../src/core/ThreadHistory.ts"
import { meterState } from "../../bench/worker/meter.ts"
import { admitNew, admitReady, grant, request, settleHead } from "./SubmissionLedgerFixtures.ts"
import {
  inObject,
  memoryHarness,
  sqlHarness,
  sqlLayer,
  type StatementText,
  textOf,
} from "./SubmissionLedgerHarness.ts"

ledgerConformance("SQLite in a Durable Object", sqlHarness)
ledgerConformance("in memory", memoryHarness)

const planOf = (storage: DurableObjectStorage, statement: StatementText) => {
  const text = textOf(statement)
  const params = Array.from(text.matchAll(/\?/g), () => "x")
  return Array.from(storage.sql.exec(`EXPLAIN QUERY PLAN ${text}`, ...params).toArray(), (row) =>
    String(row.detail),
  )
}

describe("SubmissionLedger on SQLite", () => {
  it.effect("runs its migrations once across incarnations over the same storage", () =>
    inObject((storage) =>
      Effect.gen(function* () {
        const first = yield* Effect.provide(admitReady(request("t", "a")), sqlLayer(storage))
        const names = () =>
          storage.sql
            .exec("SELECT name FROM effect_agent_migrations ORDER BY name")
            .toArray()
            .map((row) => row.name)
        const all = [
          "submission-ledger/001-create",
          "submission-ledger/002-pass-indexes",
          "thread-history/001-create",
          "thread-store/003-billed-rows",
          "thread-store/004-subagent-links",
          "thread-store/005-durable-waits",
          "thread-store/006-retention",
          "thread-store/007-schedules",
          "thread-store/008-ordered-incarnations",
          "thread-store/009-retention-when-used",
          "thread-store/010-schedule-overlap",
          "thread-store/011-event-ids",
          "thread-store/012-removed-counts",
        ]
        expect(names()).toEqual(all)
        const second = yield* Effect.provide(
          Effect.gen(function* () {
            const ledger = yield* SubmissionLedger
            const next = yield* admitNew(request("t", "b"))
            return [yield* Stream.runCollect(ledger.scanNonterminal), next] as const
          }),
          sqlLayer(storage),
        )
        expect(names()).toEqual(all)
        expect(second[0]).toEqual([first, second[1]])
        expect(second[1].queueSequence).toBe(2)
      }),
    ),
  )

  it.effect("begins each incarnation over the same storage after every earlier one that claimed", () =>
    inObject((storage) =>
      Effect.gen(function* () {
        // Each opens the ledger anew over the storage, as a new incarnation does, and claims.
        const storedCount = () =>
          storage.sql
            .exec<{ value: string }>(`SELECT value FROM ${META_TABLE} WHERE key = 'incarnations'`)
            .toArray()
            .map((row) => Number(row.value))
        const beginAndClaim = (n: number) =>
          Effect.provide(
            Effect.gen(function* () {
              const ledger = yield* SubmissionLedger
              const id = yield* ledger.beginIncarnation
              // Only a Claim records the incarnation: beginning and reading write nothing.
              expect(storedCount()).toEqual(n === 0 ? [] : [n])
              yield* admitNew(request(`t-${n}`, "a"))
              yield* ledger.claim(ThreadId.make(`t-${n}`), grant(n, 1_000 + n, 30_000, id))
              expect(storedCount()).toEqual([n + 1])
              return id
            }),
            sqlLayer(storage).pipe(Layer.fresh),
          )
        const ids: Array<string> = []
        for (let n = 0; n < 11; n++) ids.push(yield* beginAndClaim(n))
        expect(ids[0]).toBe("0000000000000001")
        expect(ids.at(-1)).toBe("0000000000000011")
        expect([...ids].sort()).toEqual(ids)
        // Two that begin before either claims share a number: neither's Claim expires for the other.
        const [a, b] = yield* Effect.all(
          [0, 1].map(() =>
            Effect.provide(
              Effect.gen(function* () {
                return yield* (yield* SubmissionLedger).beginIncarnation
              }),
              sqlLayer(storage).pipe(Layer.fresh),
            ),
          ),
        )
        expect(a).toBe("0000000000000012")
        expect(b).toBe(a)
      }),
    ),
  )

  it.effect("upgrades a ledger written before its pass indexes and keeps counting exactly", () =>
    inObject((storage) =>
      Effect.gen(function* () {
        yield* Effect.provide(runMigrations(storeMigrations.slice(0, 1)), sqlClientLayer(storage))
        const insert = (id: string, sequence: number, state: string) =>
          storage.sql.exec(
            `INSERT INTO ${SUBMISSIONS_TABLE} (submission_id, thread_id, lane_key, queue_sequence, idempotency_key,
              agent_id, agent_digest, input_payload, input_digest, receipt_id, state, producer_epoch,
              abort_requested, created_at) VALUES (?, 't', ?, ?, ?, 'agent', 'd', '{}', 'i', ?, ?, 1, 0, 0)`,
            id,
            laneKey("t"),
            sequence,
            `key-${id}`,
            `receipt-${id}`,
            state,
          )
        insert("s1", 1, "settled")
        insert("s2", 2, "settled")
        insert("s3", 3, "ready")
        const [count, next] = yield* Effect.provide(
          Effect.gen(function* () {
            const ledger = yield* SubmissionLedger
            const before = yield* ledger.countAllNonterminal
            const next = yield* admitNew(request("t", "after-upgrade"))
            return [before, next] as const
          }),
          sqlLayer(storage),
        )
        expect(count).toBe(1)
        // Old rows keep their states; only the live one is in a lane, and numbering goes on.
        const rows = storage.sql
          .exec(`SELECT submission_id, state, lane_status FROM ${SUBMISSIONS_TABLE} ORDER BY queue_sequence`)
          .toArray()
          .map((row) => [row.submission_id, row.state, row.lane_status])
        expect(rows).toEqual([
          ["s1", "settled", "closed"],
          ["s2", "settled", "closed"],
          ["s3", "ready", "open"],
          [next.submissionId, "ready", "open"],
        ])
        expect(next.queueSequence).toBe(4)
      }),
    ),
  )

  it.effect("answers lane queries and the scan from indexes over unsettled rows", () =>
    inObject((storage) =>
      Effect.gen(function* () {
        yield* Effect.provide(Effect.void, sqlLayer(storage))
        for (const key of ["head", "count", "claim", "scanPage", "nextOpen", "laneDepth"] as const) {
          expect(planOf(storage, statements[key]).join("\n"), key).toContain(`${SUBMISSIONS_TABLE}_lane`)
        }
        for (const key of ["head", "count", "claim", "scanPage", "nextOpen"] as const) {
          expect(planOf(storage, statements[key]).join("\n"), key).toContain(`${SUBMISSIONS_TABLE}_parked`)
        }
        // The lane seek reads its head in index order: its wait check runs for that row alone.
        expect(planOf(storage, statements.nextOpen).join("\n")).not.toContain("TEMP B-TREE")
        // The walk past parked lanes seeks both indexes and sorts nothing.
        const walk = planOf(storage, statements.nextUnparked).join("\n")
        expect(walk).toContain(`${SUBMISSIONS_TABLE}_lane`)
        expect(walk).toContain(`${SUBMISSIONS_TABLE}_parked`)
        expect(walk).not.toContain("TEMP B-TREE")
        // Timed waits are read from the due index alone, in its order: no sort, no other rows.
        for (const key of ["nextDue", "earliestDue", "anyDue"] as const) {
          const plan = planOf(storage, statements[key]).join("\n")
          expect(plan, key).toContain(`${SUBMISSIONS_TABLE}_due`)
          expect(plan, key).not.toContain("TEMP B-TREE")
        }
        const texts = [
          ...Object.values<StatementText | { readonly Owner: string; readonly Unowned: string }>(statements),
          ...Object.values<StatementText>(rowStatements),
          ...Object.values<StatementText>(pageStatements),
        ].flatMap((text) => (typeof text === "object" ? [text.Owner, text.Unowned] : [textOf(text)]))
        for (const text of texts) {
          // Every table access is an index SEARCH; a "SCAN <table>" step would read every row.
          // Scanning a subquery's own (bounded) result reads no table row, nor does walking the
          // records of one history row (`json_each`, a virtual table over a value).
          const scans = planOf(storage, text).filter(
            (line) =>
              line.startsWith("SCAN") &&
              line !== "SCAN CONSTANT ROW" &&
              !line.startsWith("SCAN (subquery") &&
              // The lane seek's recursive walk: one row per lane it passed over.
              line !== "SCAN seek" &&
              line !== "SCAN e VIRTUAL TABLE INDEX 1:",
          )
          expect(scans, text).toEqual([])
        }
      }),
    ),
  )

  it.effect("fails with a LedgerError for a stored row that does not decode", () =>
    inObject((storage) =>
      Effect.provide(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          const row = yield* admitReady(request("t", "a"))
          storage.sql.exec(
            `UPDATE ${SUBMISSIONS_TABLE} SET state = 'bogus' WHERE submission_id = ?`,
            row.submissionId,
          )
          const lookup = yield* Effect.flip(ledger.lookup(row.submissionId))
          expect(lookup._tag).toBe("LedgerError")
          expect(lookup.operation).toBe("SubmissionLedger.lookup")
          expect(lookup.message).toContain(row.submissionId)
          const scan = yield* Effect.flip(Stream.runCollect(ledger.scanNonterminal))
          expect(scan._tag).toBe("LedgerError")
        }),
        sqlLayer(storage),
      ),
    ),
  )

  it.effect("refuses to open over storage that lost its Submission id salt, naming it", () =>
    inObject((storage) =>
      Effect.gen(function* () {
        yield* Effect.provide(Effect.void, sqlLayer(storage))
        storage.sql.exec(`DELETE FROM ${META_TABLE} WHERE key = 'submission-id-salt'`)
        const error = yield* Effect.flip(Effect.provide(Effect.void, sqlLayer(storage).pipe(Layer.fresh)))
        expect(error._tag).toBe("LedgerError")
        expect(error.message).toContain("salt")
      }),
    ),
  )

  it.effect("records an incarnation's number again after a rollback undid it", () =>
    inObject((storage) =>
      Effect.provide(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          const sql = yield* SqlClient
          const stored = () =>
            storage.sql
              .exec<{ value: string }>(`SELECT value FROM ${META_TABLE} WHERE key = 'incarnations'`)
              .toArray()
              .map((row) => Number(row.value))
          const id = yield* ledger.beginIncarnation
          yield* admitNew(request("t", "a"))
          yield* admitNew(request("u", "a"))
          // The first Claim records the number, and the transaction around it rolls back.
          const undone = sql.withTransaction(
            Effect.andThen(
              ledger.claim(ThreadId.make("t"), grant(1, 1_000, 30_000, id)),
              Effect.fail("undo"),
            ),
          )
          expect(yield* Effect.flip(undone)).toBe("undo")
          expect(stored()).toEqual([])
          // The next Claim records it again: a Claim never names a number the storage lacks.
          yield* ledger.claim(ThreadId.make("u"), grant(2, 1_001, 30_000, id))
          expect(stored()).toEqual([Number(id)])
        }),
        layerWithLedger.pipe(Layer.provideMerge(sqlClientLayer(storage))),
      ),
    ),
  )

  it.effect("checks admission again when another instance wrote the lane after the first check", () =>
    inObject((storage) =>
      Effect.gen(function* () {
        // Two incarnations over one storage: the first checks, the second admits on the same
        // lane, then the first admits what it checked; its verdict is not the stale one.
        const first = yield* Layer.build(sqlLayer(storage).pipe(Layer.fresh))
        const second = yield* Layer.build(sqlLayer(storage).pipe(Layer.fresh))
        const inFirst = Effect.provide(first)
        const check = yield* inFirst(
          Effect.gen(function* () {
            return yield* (yield* SubmissionLedger).checkAdmission(request("t", "a"))
          }),
        )
        expect(check._tag).toBe("None")
        const other = yield* Effect.provide(admitNew(request("t", "b")), second)
        expect(other.queueSequence).toBe(1)
        const mine = yield* inFirst(admitNew(request("t", "a")))
        expect(mine.queueSequence).toBe(2)
        // And a full lane refuses at admission even though the first check let it through.
        const limited = yield* Layer.build(
          sqlLayer(storage, { limits: { maxQueueDepthPerLane: 3, maxInputBytes: 1_048_576 } }).pipe(
            Layer.fresh,
          ),
        )
        yield* Effect.provide(
          Effect.gen(function* () {
            return yield* (yield* SubmissionLedger).checkAdmission(request("t", "c"))
          }),
          limited,
        )
        yield* Effect.provide(admitNew(request("t", "d")), second)
        const refused = yield* Effect.flip(Effect.provide(admitNew(request("t", "c")), limited))
        expect(refused._tag).toBe("AdmissionRefused")
      }).pipe(Effect.scoped),
    ),
  )

  it.effect("maps storage failures to a LedgerError naming the operation", () =>
    inObject((storage) =>
      Effect.provide(
        Effect.gen(function* () {
          const ledger = yield* SubmissionLedger
          storage.sql.exec(`DROP TABLE ${SUBMISSIONS_TABLE}`)
          const error = yield* Effect.flip(ledger.head(ThreadId.make("t")))
          expect(error._tag).toBe("LedgerError")
          expect(error.operation).toBe("SubmissionLedger.head")
          const admit = yield* Effect.flip(ledger.admit(request("t", "a")))
          expect(admit._tag).toBe("LedgerError")
        }),
        sqlLayer(storage).pipe(Layer.fresh),
      ),
    ),
  )
})

describe("SubmissionLedger operator pages on SQLite", () => {
  /** Runs a page statement as the ledger does and reports the rows SQLite read for it (billed). */
  const rowsRead = (storage: DurableObjectStorage, text: string, params: ReadonlyArray<unknown>) => {
    const cursor = storage.sql.exec(text, ...params)
    const rows = cursor.toArray()
    return { rows: rows.length, read: cursor.rowsRead }
  }

  it.effect("reads a bounded window per page, not every row of a large lane", () =>
    inObject((storage) =>
      Effect.gen(function* () {
        const lane = "big"
        const key = laneKey(lane)
        yield* Effect.provide(
          Effect.gen(function* () {
            yield* admitReady(request(lane, "rare", { agentId: AgentId.make("rare") }))
            for (let i = 0; i < 2 * PAGE_WINDOW; i++) yield* admitReady(request(lane, `k${i}`))
          }),
          sqlLayer(storage, { limits: { maxQueueDepthPerLane: 4 * PAGE_WINDOW, maxInputBytes: 1_024 } }),
        )
        const newest = 2 * PAGE_WINDOW + 2
        // The newest 50 admissions: about one history row and one ledger row each.
        const first = rowsRead(storage, pageStatements.admissionsPage(50), [
          lane,
          newest - PAGE_WINDOW,
          newest,
          null,
          null,
          null,
          null,
        ])
        expect(first.rows).toBe(50)
        expect(first.read).toBeLessThan(200)
        // A filter nothing in the window matches reads the window, not the lane.
        const sparse = rowsRead(storage, pageStatements.admissionsPage(50), [
          lane,
          newest - PAGE_WINDOW,
          newest,
          "rare",
          "rare",
          null,
          null,
        ])
        expect(sparse.rows).toBe(0)
        expect(sparse.read).toBeLessThanOrEqual(PAGE_WINDOW + 10)
        const unsettled = rowsRead(storage, pageStatements.unsettledPage(50), [
          key,
          1,
          PAGE_WINDOW,
          key,
          1,
          PAGE_WINDOW,
          JSON.stringify(["running"]),
          null,
          null,
        ])
        expect(unsettled.rows).toBe(0)
        expect(unsettled.read).toBeLessThanOrEqual(PAGE_WINDOW + 10)
        const counts = rowsRead(storage, pageStatements.laneCounts, [lane, lane, lane, key, key])
        expect(counts.read).toBeLessThanOrEqual(COUNT_CAP + 10)
      }),
    ),
  )

  it.effect("lanePage seeks its cursor: a page deep in a lane reads about the rows it answers", () =>
    inObject((storage) =>
      Effect.gen(function* () {
        const lane = ThreadId.make("deep")
        const admissions = 600
        yield* Effect.provide(
          Effect.gen(function* () {
            for (let i = 0; i < admissions; i++) {
              yield* admitReady(request(lane, `k${i}`))
              // Settled heads leave records between the admissions, as a lane that runs does.
              if (i % 3 === 0) yield* settleHead(lane, 1_000 + i)
            }
          }),
          sqlLayer(storage, { limits: { maxQueueDepthPerLane: 2 * admissions, maxInputBytes: 1_024 } }),
        )
        const meter = meterState({ storage } as unknown as DurableObjectState)
        yield* Effect.provide(
          Effect.gen(function* () {
            const ledger = yield* SubmissionLedger
            for (const after of [0, 1, 299, 595, admissions]) {
              meter.reset()
              const page = yield* ledger.lanePage(lane, { after, limit: 5 })
              const expected = Array.from({ length: 5 }, (_, i) => after + 1 + i).filter(
                (q) => q <= admissions,
              )
              expect(page.map((row) => row.queueSequence)).toEqual(expected)
              // Five rows with their acceptance records and the seeks that find the first: not
              // every record before the cursor.
              expect({ after, rowsRead: meter.snapshot().sqlRowsRead }).toEqual({
                after,
                rowsRead: expect.toSatisfy((n: number) => n <= 40),
              })
            }
            // Followed page by page, the lane's every Submission once, in queue order.
            const walked: Array<number> = []
            for (let after = 0; ;) {
              const page = yield* ledger.lanePage(lane, { after, limit: 37 })
              if (page.length === 0) break
              walked.push(...page.map((row) => row.queueSequence))
              after = page.at(-1)?.queueSequence ?? after
            }
            expect(walked).toEqual(Array.from({ length: admissions }, (_, i) => i + 1))
          }),
          sqlLayer(meter.storage),
        )
      }),
    ),
  )
})
