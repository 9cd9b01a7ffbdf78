import Foundation
import Logging
@testable import Persistence
import PostgresNIO
import Shared
import Testing

/// A claim's cost follows what it returns even when the table's statistics were taken at a
/// quiet moment: the partner kept up (nothing pending when ANALYZE ran), then a backlog
/// formed. Measured in buffers read (EXPLAIN ANALYZE), which do not depend on the machine's
/// speed. In a database of its own: the test analyses the whole deliveries table.
@Suite struct DeliveryQueueStatisticsTests {
    let logger = Logger.forTests("test.queue-statistics")

    @Test func aClaimReadsLittleMoreThanItReturnsAfterAnAnalyzeThatSawNothingPending() async throws {
        let logger = logger
        try await withProject { database, webhooks, endpointId in
            // History: ten delivered deliveries for each of 2,000 devices, analysed with none pending.
            try await Self.insertDeliveredHistory(20_000, to: endpointId, in: database, logger: logger)
            try await database.client.query("VACUUM ANALYZE deliveries", logger: logger)
            // Then a backlog: each device's next two events, the first of each due; the claim's
            // reads measured, then measured again with the backlog doubled.
            func queueBacklog(devices: Range<Int>) async throws {
                let backlog = Self.deliveries(to: endpointId, devices: devices, sequences: 11...12)
                #expect(try await webhooks.enqueue(backlog) == backlog.count)
            }
            /// Deliveries claimed and the shared buffers read for them (hit or from disk).
            func claimReads() async throws -> (claimed: Int, buffers: Int) {
                let claim = WebhookStore.claimStatement(
                    limit: 100, perEndpoint: 1000, owner: "a", lease: .seconds(60), gapHold: .seconds(60), excluding: [])
                let run = try await Self.run(claim, settings: WebhookStore.claimSettings, in: database, logger: logger)
                return (run.rows, run.buffers)
            }
            try await queueBacklog(devices: 0..<2000)
            let first = try await claimReads()
            try await queueBacklog(devices: 2000..<4000)
            let second = try await claimReads()
            #expect(first.claimed == 100 && second.claimed == 100)
            // A claim reads a window of 400 due rows and probes each device's (about 25 buffers a
            // row, whatever waits): 10,057 buffers with 4,000 pending, 10,054 with 8,000. Planned
            // with the statistics, it scanned the backlog per device: 72,000 to 83,000 and 139,000
            // to 160,000 in two runs.
            #expect(
                Double(second.buffers) < 1.3 * Double(first.buffers),
                "\(first.buffers) buffers with 4,000 pending, \(second.buffers) with 8,000")
            #expect(first.buffers < 200 * first.claimed, "the claim read \(first.buffers) buffers for \(first.claimed) deliveries")
        }
    }

    /// A claim capped per endpoint checks no more of one endpoint's due rows than it may
    /// take: with one partner behind (a due backlog of 2,000 devices at one endpoint), a claim
    /// with room for 128 that may take 32 of that endpoint reads for those 32, not for a
    /// window of 512.
    @Test func aClaimCappedPerEndpointChecksOnlyWhatItMayTake() async throws {
        let logger = logger
        try await withProject { database, webhooks, endpointId in
            let backlog = Self.deliveries(to: endpointId, devices: 0..<2000)
            #expect(try await webhooks.enqueue(backlog) == backlog.count)
            try await database.client.query("VACUUM ANALYZE deliveries", logger: logger)
            let claim = WebhookStore.claimStatement(
                limit: 128, perEndpoint: 32, owner: "a", lease: .seconds(60), gapHold: .seconds(60), excluding: [])
            let run = try await Self.run(claim, settings: WebhookStore.claimSettings, in: database, logger: logger)
            #expect(run.rows == 32)
            // Checking the whole window of 512 read 5,062 buffers (158 a delivery taken);
            // checking twice the cap, 1,478 (46 a delivery).
            #expect(run.buffers < 75 * run.rows, "the claim read \(run.buffers) buffers for \(run.rows) deliveries")
        }
    }

    /// A claim reads nothing of what waits behind the deliveries it takes: 100 devices' first
    /// deliveries, with 40 more of each device waiting behind them, are claimed for about what
    /// 100 with 2 behind each cost (3,507 buffers against 3,188). Looking, for each one taken,
    /// for a later one of its device in flight read every pending delivery of the device
    /// (7,833 against 3,688).
    @Test func aClaimReadsNothingOfWhatWaitsBehindWhatItTakes() async throws {
        let logger = logger
        try await withProject { database, webhooks, endpointId in
            /// Queues `behind` + 1 deliveries for each of `devices`, then claims their first ones:
            /// how many it took and the shared buffers it read.
            func claimHeads(devices: Range<Int>, behind: Int) async throws -> (claimed: Int, buffers: Int) {
                // Queued as events come, the devices' in turn: each device's deliveries on pages of their own.
                let backlog = Self.deliveries(to: endpointId, devices: devices, sequences: 1...(behind + 1))
                    .sorted { ($0.sequence ?? 0, $0.eventId) < ($1.sequence ?? 0, $1.eventId) }
                #expect(try await webhooks.enqueue(backlog) == backlog.count)
                try await database.client.query("VACUUM ANALYZE deliveries", logger: logger)
                let claim = WebhookStore.claimStatement(
                    limit: 100, perEndpoint: 1000, owner: "a", lease: .seconds(60), gapHold: .seconds(60), excluding: [])
                let run = try await Self.run(claim, settings: WebhookStore.claimSettings, in: database, logger: logger)
                return (run.rows, run.buffers)
            }
            let short = try await claimHeads(devices: 0..<100, behind: 2)
            let long = try await claimHeads(devices: 100..<200, behind: 40)
            #expect(short.claimed == 100 && long.claimed == 100)
            #expect(
                Double(long.buffers) < 1.3 * Double(short.buffers),
                "\(short.buffers) buffers with 2 waiting behind each, \(long.buffers) with 40")
        }
    }

    /// A claim that finds nothing due costs little, however many deliveries went through the
    /// queue since the last vacuum: each was queued due, in a version whose entry stays behind
    /// in the due order until a vacuum (its claimed and delivered versions, at 'infinity' and
    /// done, write none). The queued versions were due while claims passed over them, and an
    /// index scan marks those it finds dead, so later claims pass them over.
    ///
    /// When a claimed version was due at the end of its lease, the bitmap scan (the planner's
    /// pick under load: docs/performance.md) read the row of every one on every claim, 409
    /// buffers here; the claim's settings keep the index scan.
    @Test func anEmptyClaimAfterMuchDeliveredDoesNotReadWhatWentThrough() async throws {
        let logger = logger
        try await withProject { database, webhooks, endpointId in
            try await database.client.query("ALTER TABLE deliveries SET (autovacuum_enabled = false)", logger: logger)
            // 3,000 deliveries through the queue: queued, claimed, delivered, with leases
            // that run out within a second.
            let deliveries = Self.deliveries(to: endpointId, devices: 0..<3000, payload: String(repeating: "x", count: 300))
            #expect(try await webhooks.enqueue(deliveries) == deliveries.count)
            var delivered = 0
            while true {
                let claimed = try await webhooks.claimDue(
                    limit: 500, perEndpoint: 500, owner: "a", lease: .milliseconds(500), gapHold: .seconds(60))
                guard !claimed.isEmpty else { break }
                try await webhooks.record(
                    claimed.map {
                        DeliveryResult(
                            deliveryId: $0.id, attempt: $0.attempt, startedAt: Date(), latency: .milliseconds(1),
                            statusCode: 204, error: nil, outcome: .delivered)
                    }, owner: "a")
                delivered += claimed.count
            }
            #expect(delivered == deliveries.count)
            try await database.client.query("ANALYZE deliveries", logger: logger)
            try await Task.sleep(for: .seconds(1))
            let claim = WebhookStore.claimStatement(
                limit: 128, perEndpoint: 32, owner: "a", lease: .seconds(60), gapHold: .seconds(60), excluding: [])
            /// Buffers read by the claim, twice in a row, and its scans.
            func emptyClaimReads(_ settings: [String]) async throws -> (buffers: [Int], scans: [String]) {
                var reads: [Int] = []
                var scans: [String] = []
                for _ in 0..<2 {
                    let run = try await Self.run(claim, settings: settings, in: database, logger: logger)
                    #expect(run.rows == 0)
                    reads.append(run.buffers)
                    scans = run.scans
                }
                return (reads, scans)
            }
            // As the store runs it: an index scan, which marks the versions it finds dead.
            var asRun = try await emptyClaimReads(WebhookStore.claimSettings)
            // A pass marks a version dead only once no transaction of the database may still see
            // it (under a loaded machine one can take a while to end): looked at again, at most
            // four times a second apart, while its second pass still reads 100 buffers or more.
            for _ in 0..<4 where asRun.buffers[1] >= 100 {
                try await Task.sleep(for: .seconds(1))
                asRun = try await emptyClaimReads(WebhookStore.claimSettings)
            }
            // The due order read by a bitmap scan, which the planner picked under load (a large,
            // much-updated queue): it reads the row of every version left behind in the window,
            // 409 buffers here while claimed versions were due at the end of their lease (898
            // in a claim logged at 5,000 fixes/s).
            // Read once the passes above could mark them: the claim's walk over the endpoints
            // (an ordered step each) reads the versions left behind until they are marked.
            var bitmap = try await emptyClaimReads(["enable_indexscan = off"])
            for _ in 0..<4 where bitmap.buffers[1] >= 100 {
                try await Task.sleep(for: .seconds(1))
                _ = try await emptyClaimReads(WebhookStore.claimSettings)
                bitmap = try await emptyClaimReads(["enable_indexscan = off"])
            }
            #expect(!asRun.scans.contains("Bitmap Heap Scan on deliveries"), "\(asRun.scans)")
            #expect(asRun.buffers[1] < 100, "an empty claim read \(asRun.buffers) buffers")
            #expect(bitmap.buffers[1] < 100, "an empty claim by bitmap scan read \(bitmap.buffers) buffers")
        }
    }

    /// The due order holds the deliveries that have a time to go, not those waiting at
    /// 'infinity': 3,000 claimed as they are queued (as under load) add nothing to it, where
    /// 3,000 left due fill pages of it. Before, each of the claimed ones wrote an entry too.
    @Test func deliveriesWaitingAtInfinityStayOutOfTheDueOrder() async throws {
        let logger = logger
        try await withProject { database, webhooks, endpointId in
            try await database.client.query("ALTER TABLE deliveries SET (autovacuum_enabled = false)", logger: logger)
            func dueOrderPages() async throws -> Int {
                let rows = try await database.client.query(
                    "SELECT (pg_relation_size('deliveries_due_order') / current_setting('block_size')::int)::int",
                    logger: logger)
                var pages = 0
                for try await value in rows.decode(Int.self) { pages = value }
                return pages
            }
            let empty = try await dueOrderPages()
            let claimedAtOnce = Self.deliveries(to: endpointId, devices: 0..<3000)
            let taken = try await webhooks.enqueue(
                claimedAtOnce, claim: WebhookStore.QueueClaim(owner: "a", lease: .seconds(60), limit: 3000))
            #expect(taken.queued == 3000 && taken.claimed.count == 3000)
            let afterClaimed = try await dueOrderPages()
            let leftDue = Self.deliveries(to: endpointId, devices: 3000..<6000)
            #expect(try await webhooks.enqueue(leftDue) == 3000)
            let afterDue = try await dueOrderPages()
            // Not one entry: the index is still its metapage (before, 14 pages, as many as the due ones fill).
            #expect(afterClaimed == empty, "\(afterClaimed) pages after 3,000 claimed (\(empty) before)")
            #expect(afterDue > afterClaimed + 5, "\(afterDue) pages after 3,000 due (\(afterClaimed) before)")
        }
    }

    /// Erasing a device reads its deliveries, not the table: of 100,000 deliveries of 2,000
    /// devices, the 50 of one device are found through the project's endpoint by the
    /// device-order index (810 buffers, most of them the update's own). Found by project and
    /// device, they were a scan of all 100,000 (3,533 buffers).
    @Test func erasingADeviceReadsItsDeliveriesNotTheTable() async throws {
        let logger = logger
        try await withProject { database, _, endpointId in
            try await Self.insertDeliveredHistory(100_000, to: endpointId, in: database, logger: logger)
            try await database.client.query("VACUUM ANALYZE deliveries", logger: logger)
            let erasing = ErasureStore.erasingDeliveriesStatement(projectId: Self.projectId, deviceId: "device-7")
            let run = try await Self.run(erasing, settings: [], in: database, logger: logger)
            #expect(run.rows == 50)
            #expect(!run.scans.contains("Seq Scan on deliveries"), "\(run.scans)")
            #expect(run.buffers < 1500, "erasing 50 deliveries read \(run.buffers) buffers")
        }
    }

    /// Queueing judges each new delivery once: whether it waits behind a pending delivery of
    /// its device, or for its predecessor, is looked up once a delivery, though the statement
    /// uses the judgment three times (to sort, to choose what the taker claims, to write).
    @Test func queueingLooksUpEachNewDeliveryOnce() async throws {
        let logger = logger
        try await withProject { database, webhooks, endpointId in
            let firsts = Self.deliveries(to: endpointId, devices: 0..<300, sequences: 1...1)
            #expect(try await webhooks.enqueue(firsts) == firsts.count)
            // 300 seconds behind their pending firsts, and 300 whose firsts never came (each
            // then also looks for its predecessor).
            let seconds = Self.deliveries(to: endpointId, devices: 0..<600, sequences: 2...2)
            let plan = try await Self.plan(of: Self.queueing(seconds), options: "ANALYZE", in: database, logger: logger)
            // Three times as many with the judgment inlined into each use: 1,800 and 900.
            #expect(Self.loops(in: plan, alias: "h") == 600, "looked for pending deliveries ahead")
            #expect(Self.loops(in: plan, alias: "p") == 300, "looked for predecessors")
            let waiting = try await database.client.query(
                "SELECT count(*) FROM deliveries WHERE sequence = 2 AND next_attempt_at = 'infinity'", logger: logger)
            for try await count in waiting.decode(Int.self) { #expect(count == 300) }
        }
    }

    /// Queueing, and recording's look for deliveries waiting behind those it recorded, look
    /// up what they need of the table by index, one probe for each delivery or device,
    /// however many deliveries the table holds: with rows of about 200 bytes (the bodies kept
    /// apart), the planner hashed the whole table to find repeats, and read every pending
    /// delivery to lock a batch's devices and to look for waiting ones.
    @Test func queueingProbesTheTableInsteadOfReadingIt() async throws {
        let logger = logger
        try await withProject { database, webhooks, endpointId in
            try await Self.queueEachDevicesNextAfterHistory(to: endpointId, webhooks: webhooks, in: database, logger: logger)

            let batch = Self.deliveries(to: endpointId, devices: 0..<300, sequences: 12...12)
            let queueing = try await Self.plan(of: Self.queueing(batch), options: "ANALYZE", in: database, logger: logger)
            #expect(Self.loops(in: queueing, alias: "x") == 300, "looked for repeats")
            #expect(
                Self.nodeTypes(in: queueing, alias: "x").allSatisfy { $0.hasPrefix("Index") },
                "\(Self.nodeTypes(in: queueing, alias: "x"))")

            let locking = try await Self.plan(
                of: WebhookStore.lockStatement(batch), options: "ANALYZE", in: database, logger: logger)
            let scans = Self.scans(in: locking)
            // Before: every pending delivery (2,000) read through the due order, then joined.
            #expect(
                !scans.contains { $0.hasPrefix("Seq Scan") || $0.hasPrefix("Bitmap Heap Scan") || $0.contains("deliveries_due_order") },
                "\(scans)")
            #expect(Self.loops(in: locking, alias: "p") == 300, "probed each device")

            // Recording the last delivered ones of 300 devices looks whether any has one waiting.
            var finished: [Int64] = []
            for try await id in try await database.client.query(
                "SELECT id FROM deliveries WHERE status = 'delivered' AND sequence = 10 ORDER BY id LIMIT 300", logger: logger
            ).decode(Int64.self) {
                finished.append(id)
            }
            let looking = try await Self.plan(
                of: WebhookStore.waitingStatement(behind: finished), options: "ANALYZE", in: database, logger: logger)
            let looks = Self.scans(in: looking)
            #expect(
                !looks.contains { $0.hasPrefix("Seq Scan") || $0.hasPrefix("Bitmap Heap Scan") || $0.contains("deliveries_due_order") },
                "\(looks)")
        }
    }

    /// Deliveries named by id (a batch of results, the leases to renew, a batch's pending
    /// ones to lock) are found each by its own key, with no array in an index condition and
    /// no read of the whole table: an index scan for `id = ANY(ids)` sorts all the ids again
    /// for every row it rechecks after another transaction changed it, so a recording that
    /// met a renewal of the same leases cost as many sorts of its ids as it had ids.
    @Test func deliveriesNamedByIdAreFoundEachByItsOwnKey() async throws {
        let logger = logger
        try await withProject { database, webhooks, endpointId in
            try await Self.queueEachDevicesNextAfterHistory(to: endpointId, webhooks: webhooks, in: database, logger: logger)
            var ids: [Int64] = []
            for try await id in try await database.client.query(
                "SELECT id FROM deliveries WHERE status = 'pending' ORDER BY id", logger: logger
            ).decode(Int64.self) {
                ids.append(id)
            }
            #expect(ids.count == 2000)
            let statements: [(String, PostgresQuery, settings: [String])] = [
                ("recording's lock", WebhookStore.recordLockStatement(ids: ids), []),
                (
                    "renewal", WebhookStore.renewalStatement(ids: ids, owner: "a", lease: .seconds(10)),
                    WebhookStore.renewalSettings
                ),
                (
                    "queueing's lock",
                    WebhookStore.lockStatement(Self.deliveries(to: endpointId, devices: 0..<2000, sequences: 12...12)), []
                ),
            ]
            for (name, statement, settings) in statements {
                let plan = try await Self.plan(of: statement, options: "", settings: settings, in: database, logger: logger)
                let conditions = Self.indexConditions(in: plan)
                #expect(!conditions.isEmpty, "\(name): \(Self.scans(in: plan))")
                #expect(!conditions.contains { $0.contains("ANY") }, "\(name): \(conditions)")
                #expect(
                    !Self.scans(in: plan).contains { $0.hasPrefix("Seq Scan") || $0.hasPrefix("Bitmap Heap Scan") },
                    "\(name): \(Self.scans(in: plan))")
            }
        }
    }
    /// The passes over disabled endpoints (parking their due deliveries, failing those whose
    /// retries ran out) read nothing of an enabled endpoint's backlog, and still find every
    /// delivery of an endpoint once it is disabled.
    @Test func thePassesOverDisabledEndpointsReadNothingOfAnEnabledOnesBacklog() async throws {
        let logger = logger
        try await withProject { database, webhooks, endpointId in
            let backlog = Self.deliveries(to: endpointId, devices: 0..<2000, sequences: 1...10)
            #expect(try await webhooks.enqueue(backlog) == backlog.count)
            try await database.client.query("ANALYZE deliveries", logger: logger)
            let parking = try await Self.run(WebhookStore.parkingStatement, settings: [], in: database, logger: logger)
            let expiring = try await Self.run(
                WebhookStore.expiringStatement(retryWindow: .zero), settings: [], in: database, logger: logger)
            // The expiring step answers one row: what it failed and read (nothing), where it stopped.
            #expect(parking.rows == 0 && expiring.rows == 1)
            // Joined to the endpoints, they read 552 and 1,235 buffers for these 20,000 pending.
            #expect(parking.buffers < 50, "parking read \(parking.buffers) buffers with every endpoint enabled")
            #expect(expiring.buffers < 50, "expiring read \(expiring.buffers) buffers with every endpoint enabled")

            // Disabled: a due one raced with the disabling is parked, and every one can run out.
            _ = try await webhooks.disableEndpoint(id: endpointId, reason: "operator")
            try await database.client.query(
                "UPDATE deliveries SET next_attempt_at = now() WHERE id = (SELECT min(id) FROM deliveries)", logger: logger)
            #expect(try await webhooks.parkDisabledDeliveries() == 1)
            #expect(try await webhooks.failExpiredWhileDisabled(retryWindow: .zero) == backlog.count)
        }
    }

    /// A step of the mend pass reads its step, not the backlog: with a partner's backlog of
    /// 20 deliveries for each of 1,000 devices, then 2,000 devices, a step of 2,000 reads
    /// about the same, a fraction of what reading every pending delivery at once does; a sweep of steps lets every device's first delivery go that waited at
    /// 'infinity', and none behind one, even where a step ends inside a device's deliveries.
    @Test func aMendStepReadsItsStepWhateverIsPending() async throws {
        let logger = logger
        try await withProject { database, webhooks, endpointId in
            /// Leaves every device's first delivery waiting at 'infinity', as a race with its
            /// queueing could.
            func stickHeads() async throws {
                try await database.client.query(
                    "UPDATE deliveries SET next_attempt_at = 'infinity' WHERE sequence = 1", logger: logger)
            }
            /// Queues 20 deliveries for each of `devices`; every device's first one stuck.
            func queueStuckBacklog(devices: Range<Int>) async throws {
                let backlog = Self.deliveries(to: endpointId, devices: devices, sequences: 1...20)
                #expect(try await webhooks.enqueue(backlog) == backlog.count)
                try await stickHeads()
            }
            func stepReads() async throws -> Int {
                let step = WebhookStore.waitingHeadsSweepStatement(after: nil, limit: 2000, gapHold: .zero)
                return try await Self.run(step, settings: [], in: database, logger: logger).buffers
            }
            try await queueStuckBacklog(devices: 0..<1000)
            let first = try await stepReads()
            try await queueStuckBacklog(devices: 1000..<2000)
            let second = try await stepReads()
            try await stickHeads()
            let whole = try await Self.run(
                WebhookStore.waitingHeadsStatement(endpointId: nil, gapHold: .zero), settings: [], in: database,
                logger: logger)
            #expect(whole.rows == 2000)
            try await stickHeads()
            // 4,211 and 5,086 buffers (the second backlog's devices interleave with the first's in
            // the index, their rows on other pages); the whole pass 61,863 and 65,054 in two runs.
            #expect(
                Double(second) < 1.5 * Double(first), "a step read \(first) buffers with 20,000 pending, \(second) with 40,000")
            #expect(second * 4 < whole.buffers, "a step read \(second) buffers, the whole pass \(whole.buffers)")

            // Steps of 30: most end inside a device's 20 deliveries.
            #expect(try await webhooks.mendEveryWaitingHead(step: 30) == 2000)
            let due = try await database.client.query(
                "SELECT sequence::int, count(*)::int FROM deliveries WHERE next_attempt_at <= now() GROUP BY 1",
                logger: logger)
            var dueBySequence: [Int: Int] = [:]
            for try await (sequence, count) in due.decode((Int, Int).self) { dueBySequence[sequence] = count }
            #expect(dueBySequence == [1: 2000])
        }
    }


    /// A large batch is queued in memory at Postgres's default work memory (4 MB a node):
    /// 5,000 deliveries whose events' bodies are a kilobyte each write no temporary file.
    @Test func aLargeBatchIsQueuedWithoutTemporaryFiles() async throws {
        let logger = logger
        try await withProject { database, _, endpointId in
            let batch = Self.deliveries(to: endpointId, devices: 0..<5000, payload: String(repeating: "x", count: 1000))
            let plan = try await Self.plan(of: Self.queueing(batch), options: "ANALYZE, BUFFERS", in: database, logger: logger)
            #expect(plan["Actual Rows"] as? Int == batch.count)
            // While each row carried its body, the batch, as unnested, judged and inserted,
            // spilled: 4,045 temporary blocks written (32 MB), unless the transaction set 32 MB.
            #expect(plan["Temp Written Blocks"] as? Int == 0, "temporary blocks written: \(plan["Temp Written Blocks"] ?? "none")")
        }
    }

    /// The operators' backlog count (polled by the notifier's monitor and `checkin status`)
    /// reads the undelivered rows by index, never the whole table of delivered ones.
    @Test func theBacklogCountReadsOnlyUndeliveredRows() async throws {
        let logger = logger
        try await withProject { database, _, endpointId in
            try await database.client.query(
                """
                INSERT INTO deliveries (endpoint_id, project_id, event_id, event_type, device_id, event_time, status)
                SELECT \(endpointId), \(Self.projectId), 'e-' || g, 'checkin', 'd-' || (g % 500), now(),
                       CASE WHEN g % 1000 = 0 THEN 'pending' WHEN g % 1000 = 1 THEN 'failed' ELSE 'delivered' END
                  FROM generate_series(0, 29999) g
                """, logger: logger)
            try await database.client.query("VACUUM ANALYZE deliveries", logger: logger)
            let backlog = try await OperationsStore(database: database, logger: logger).deliveryBacklog()
            #expect(backlog.map { [$0.pending, $0.failed] } == [[30, 30]])
            let scans = Self.scans(
                in: try await Self.plan(of: OperationsStore.backlogStatement, options: "", in: database, logger: logger))
            #expect(!scans.contains("Seq Scan on deliveries"), "\(scans)")
            #expect(scans.contains { $0.hasSuffix("on deliveries") }, "\(scans)")
        }
    }

    /// A deployment that took statistics before this change loses them when it migrates, and
    /// takes none on `status` after.
    @Test func migratingDropsTheStatusStatisticsTakenBefore() async throws {
        let logger = logger
        let url = try await freshDatabaseURL(logger: logger)
        @Sendable func statusStatistics(_ database: Database) async throws -> Int {
            try await database.client.query("ANALYZE deliveries", logger: logger)
            let rows = try await database.client.query(
                "SELECT count(*)::int FROM pg_stats WHERE tablename = 'deliveries' AND attname = 'status'", logger: logger)
            var count = 0
            for try await value in rows.decode(Int.self) { count = value }
            return count
        }
        let before = try await withMigratedDatabase(
            url: url, migrations: Migration.all.filter { $0.version < 23 }, logger: logger
        ) { database in
            let (_, endpointId) = try await Self.projectWithEndpoint(database, logger: logger)
            try await database.client.query(
                """
                INSERT INTO deliveries (endpoint_id, project_id, event_id, event_type, device_id, event_time, payload, status)
                SELECT \(endpointId), \(Self.projectId), 'e-' || g, 'checkin', 'd', now(), '{}', 'delivered' FROM generate_series(1, 1000) g
                """, logger: logger)
            return try await statusStatistics(database)
        }
        #expect(before == 1)
        #expect(try await withMigratedDatabase(url: url, logger: logger) { try await statusStatistics($0) } == 0)
    }
}
