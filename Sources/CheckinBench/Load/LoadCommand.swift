import ArgumentParser
import AsyncHTTPClient
import CommandSupport
import Foundation
import Logging
import NIOCore
import Shared

struct LoadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "load",
        abstract: "Load an ingest service; report speed and latency.",
        discussion: """
            Sends generated device trips and reports throughput and latency. \
            Bounded: it sends exactly --fixes fixes and stops. Closed loop by default (--concurrency requests in \
            flight); with --rate it sends on a fixed schedule whatever the answers take (open loop), and a \
            request's latency counts from when it was due. With --metrics it then waits until the evaluator's \
            checkin_evaluator_fixes_total has grown by that many, to measure the pipeline end to end. With \
            --receive it registers a webhook endpoint of its own for the project (in CHECKIN_DATABASE_URL's \
            database), verifies every webhook's signature, and reports how long each event took from the \
            acceptance of the fix that decided it to its webhook. Meant for a pipeline on this machine \
            (checkin dev or the three services, webhooks to this machine allowed). With several --url, requests \
            go to the ingests in turn, and a request one of them does not take (refused or closed connection, \
            5xx) goes to the next until one does: it is counted as retried, never as lost.
            """)

    @Option(
        parsing: .singleValue,
        help: "Ingest base URL (default http://127.0.0.1:8080); repeat to spread requests over several ingests.")
    var url: [String] = []
    @Option(help: "Device API key (omit when the ingest does not require one).") var key: String?
    @Option(help: "Project id written into each fix.") var project = "load"
    @Option(parsing: .unconditional, help: "How many fixes to send in all.") var fixes = 20_000
    @Option(parsing: .unconditional, help: "Distinct devices.") var devices = 200
    @Option(parsing: .unconditional, help: "Fixes per request.") var batch = 100
    @Option(parsing: .unconditional, help: "Requests in flight at once (closed loop); with --rate, the most that may be.")
    var concurrency = 8
    @Option(parsing: .unconditional, help: "Fixes per second on a fixed schedule (open loop); 0: as fast as --concurrency allows.")
    var rate = 0
    @Option(help: "A /metrics URL of the evaluator (or of checkin dev) to wait on.") var metrics: String?
    @Flag(
        help: """
            Keep each device's fixes in order across requests in flight together: a request goes out only once \
            the requests holding its devices' previous fixes are answered (its latency still counts from when it \
            was due).
            """)
    var inOrder = false
    @Flag(
        help: """
            After the run, count the run's fixes the evaluators recorded a decision for (decision records in \
            CHECKIN_DATABASE_URL's database, whichever evaluator processes came and went) and report the \
            others as lost.
            """)
    var countDecisions = false
    @Flag(help: "Receive the project's webhooks and report fix-accepted (and fix-sent) to webhook-received latency.")
    var receive = false
    @Option(parsing: .unconditional, help: "With --receive, register this many endpoints (each event is delivered to each).")
    var endpoints = 1
    @Option(parsing: .unconditional, help: "Seconds to wait for the evaluator, and for webhooks to stop arriving.") var timeout = 300
    @Flag(help: "Print one JSON summary instead of text.") var json = false
    @Flag(
        help: """
            With --receive and --webhooks-per-fix: keep the endpoints disabled until every webhook due is queued, \
            then enable them and report how fast the notifier drains the queue.
            """)
    var holdWebhooks = false
    @Option(
        parsing: .unconditional,
        help: """
            Events per fix to aim for with zones generated on the devices' paths (for instance 0.17, one \
            webhook per six fixes); 0: walk through the example zones (about 0.03).
            """)
    var webhooksPerFix = 0.0
    @Flag(help: "Print the zones document the trip walks through (with --webhooks-per-fix) and exit.") var printZones = false
    @Option(
        parsing: .singleValue,
        help: """
            NAME=PID: report the CPU the process tree rooted at PID spent over the run, per fix (repeatable; \
            for instance checkin=…, postgres=<postmaster>, broker=…). The load's own and the whole machine's \
            are always reported.
            """)
    var cpu: [String] = []

    /// The ingests requests go to, in turn.
    var urls: [String] { url.isEmpty ? ["http://127.0.0.1:8080"] : url }

    /// The process trees named by --cpu, and the load itself.
    var measuredProcesses: [String: Int32] {
        var roots = ["load": getpid()]
        for entry in cpu {
            let parts = entry.split(separator: "=", maxSplits: 1)
            if parts.count == 2, let pid = Int32(parts[1]) { roots[String(parts[0])] = pid }
        }
        return roots
    }

    func validate() throws {
        guard fixes > 0, devices > 0, batch > 0, concurrency > 0, rate >= 0 else {
            throw CommandFailure("--fixes, --devices, --batch and --concurrency must be positive, --rate zero or more", helpOf: Self.self)
        }
        guard batch <= 1000 else { throw CommandFailure("--batch must be at most 1000 (the ingest limit)", helpOf: Self.self) }
        guard (1...100).contains(endpoints) else { throw CommandFailure("--endpoints must be between 1 and 100", helpOf: Self.self) }
        guard timeout >= 1 else { throw CommandFailure("--timeout must be at least 1 second", helpOf: Self.self) }
        guard (0...1).contains(webhooksPerFix) else {
            throw CommandFailure("--webhooks-per-fix must be between 0 and 1", helpOf: Self.self)
        }
        guard !holdWebhooks || (receive && webhooksPerFix > 0) else {
            throw CommandFailure(
                "--hold-webhooks needs --receive and --webhooks-per-fix (to know how many webhooks are due)", helpOf: Self.self)
        }
        for entry in cpu {
            let parts = entry.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, !parts[0].isEmpty, let pid = Int32(parts[1]), pid > 0 else {
                throw CommandFailure("--cpu takes NAME=PID (for instance postgres=4242), not \"\(entry)\"", helpOf: Self.self)
            }
        }
        guard !printZones || webhooksPerFix > 0 else {
            throw CommandFailure(
                "--print-zones needs --webhooks-per-fix: the example trip's zones are examples/zones.json", helpOf: Self.self)
        }
    }

    func run() async throws {
        let client = HTTPClient.shared
        let trip = LoadTrip(
            project: project, devices: devices, fixes: fixes,
            layout: webhooksPerFix > 0 ? .dense(webhooksPerFix: webhooksPerFix) : .exampleZones)
        if printZones {
            print(String(decoding: try WireJSON.encoder().encode(trip.zones), as: UTF8.self))
            return
        }
        var summary = LoadSummary(fixes: fixes, devices: devices, batch: batch, openLoopRate: rate == 0 ? nil : rate)
        let decidingFixes = webhooksPerFix > 0 ? try trip.decidingFixes(zones: trip.zones) : nil
        if let decidingFixes { summary.expectedWebhooks = decidingFixes.count * endpoints }
        // Decision records written from here on are this run's (the trip's fix ids repeat from run to run).
        let decisionsSince = Date().addingTimeInterval(-1)
        var stagesBefore: PipelineStages?
        if let metrics { stagesBefore = try await PipelineStages.scrape(client: client, url: metrics) }
        let fixTimes = FixTimes(count: fixes)
        let receiver =
            receive
            ? try await LoadReceiver.start(
                project: project, trip: trip, decidingFix: decidingFixes ?? [:], fixTimes: fixTimes, endpoints: endpoints,
                held: holdWebhooks)
            : nil
        let roots = measuredProcesses
        let cpuBefore = ProcessCPUSample.read(roots: roots)
        let cpuClockStart = ContinuousClock.now
        // With every webhook due known, the run ends at the last one's arrival, not after the
        // quiet period that checks none comes twice.
        let cpuAtLastWebhook = Task { [expected = summary.expectedWebhooks] () -> (ProcessCPUSample, ContinuousClock.Instant)? in
            guard let receiver, let expected else { return nil }
            while receiver.received < expected {
                guard !Task.isCancelled else { return nil }
                try? await Task.sleep(for: .milliseconds(20))
            }
            return (ProcessCPUSample.read(roots: roots), ContinuousClock.now)
        }
        do {
            let started = try await send(trip: trip, client: client, fixTimes: fixTimes, receiver: receiver, summary: &summary)
            if holdWebhooks, let receiver, let expectedWebhooks = summary.expectedWebhooks {
                summary.drain = try await receiver.releaseWhenQueued(expected: expectedWebhooks, since: started, timeout: .seconds(timeout))
            }
            summary.webhooks = try await receiver?.waitUntilQuiet(
                since: started, timeout: .seconds(timeout), expected: summary.expectedWebhooks)
            if countDecisions {
                var decisions = try await DecisionCount.wait(trip: trip, since: decisionsSince, timeout: .seconds(timeout))
                if !decisions.lostFixIds.isEmpty {
                    do {
                        var quiet = Logger(label: "checkin.load")
                        quiet.logLevel = .warning
                        decisions.lostFixPlaces = try await LostFixTrace.places(of: decisions.lostFixIds, logger: quiet)
                    } catch {
                        decisions.lostFixPlaces = ["could not read where the lost fixes are: \(error)"]
                    }
                }
                summary.decisions = decisions
            }
        } catch {
            cpuAtLastWebhook.cancel()
            try? await receiver?.stop()
            throw error
        }
        cpuAtLastWebhook.cancel()
        let (cpuAfter, cpuClockEnd) = await cpuAtLastWebhook.value ?? (ProcessCPUSample.read(roots: roots), ContinuousClock.now)
        summary.cpu = CPUFigures(
            from: cpuBefore, to: cpuAfter, wallSeconds: (cpuClockEnd - cpuClockStart).seconds, fixes: fixes,
            webhooks: summary.webhooks?.received)
        try await receiver?.stop()
        if let metrics, let stagesBefore {
            summary.stages = try await PipelineStages.scrape(client: client, url: metrics).since(stagesBefore)
        }
        if json { try printJSON(summary) } else { summary.printText() }
    }

    /// Sends every batch and, with --metrics, waits for the evaluator; returns when the first request went out.
    private func send(
        trip: LoadTrip, client: HTTPClient, fixTimes: FixTimes, receiver: LoadReceiver?, summary: inout LoadSummary
    ) async throws -> ContinuousClock.Instant {
        var before: Double?
        if let metrics { before = try await evaluatedCount(client: client, url: metrics) }
        let batches = stride(from: 0, to: fixes, by: batch).map { $0..<min($0 + batch, fixes) }
        let progress = LoadProgress(total: fixes, enabled: !json && isatty(STDERR_FILENO) == 1)
        let order = inOrder ? RequestOrder() : nil
        let retries = RetryTally()
        let started = ContinuousClock.now
        receiver?.runStarted(at: Date().timeIntervalSince1970)
        let latencies = try await withThrowingTaskGroup(of: Double.self, returning: [Double].self) { group in
            group.addTask {
                await progress.run(started: started, webhooks: { receiver?.received ?? 0 })
                return -1
            }
            var latencies: [Double] = []
            var inFlight = 0
            for (index, range) in batches.enumerated() {
                // Open loop: each request has its time; one that could not start on time (too many in
                // flight) counts its latency from that time all the same.
                let due = rate > 0 ? started + .seconds(Double(index * batch) / Double(rate)) : ContinuousClock.now
                if rate > 0 { try await Task.sleep(until: due, clock: .continuous) }
                while inFlight >= (rate > 0 ? max(concurrency, 64) : concurrency), let latency = try await group.next() {
                    if latency >= 0 {
                        latencies.append(latency)
                        inFlight -= 1
                    }
                }
                inFlight += 1
                group.addTask {
                    defer { order?.answered(index) }
                    // The request holding the previous fix of this one's last device, and every one before it.
                    if let order, range.upperBound - 1 - devices >= 0 {
                        await order.waitUntilAnswered(through: (range.upperBound - 1 - devices) / batch)
                    }
                    fixTimes.recordSent(range, at: Date().timeIntervalSince1970 - (ContinuousClock.now - due).seconds)
                    let latency = try await post(
                        try trip.batch(range), client: client, due: due, first: index % urls.count, retries: retries)
                    fixTimes.recordAccepted(range, at: Date().timeIntervalSince1970)
                    progress.sent(range.count)
                    return latency
                }
            }
            while inFlight > 0, let latency = try await group.next() {
                if latency >= 0 {
                    latencies.append(latency)
                    inFlight -= 1
                }
            }
            progress.finish()
            group.cancelAll()
            return latencies
        }
        let sentSeconds = (ContinuousClock.now - started).seconds
        summary.requests = RequestFigures(requests: latencies.count, seconds: sentSeconds, latenciesSeconds: latencies)
        summary.requests.retried = retries.count

        guard let metrics, let before else { return started }
        let deadline = ContinuousClock.now + .seconds(timeout)
        while try await evaluatedCount(client: client, url: metrics) - before < Double(fixes) {
            guard ContinuousClock.now < deadline else {
                throw CommandFailure("the evaluator did not count \(fixes) more fixes within \(timeout) s")
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        summary.endToEndSeconds = (ContinuousClock.now - started).seconds
        return started
    }

    /// Posts one batch to the ingest `first` of `urls`, and on to the next whenever one does not
    /// take it (the connection refused or closed, a 5xx answer: an ingest stopping, say), for up to
    /// --timeout; a 4xx answer ends the run. Its latency in seconds counts from `due`, retries included.
    func post(
        _ body: [UInt8], client: HTTPClient, due: ContinuousClock.Instant, first: Int, retries: RetryTally
    ) async throws -> Double {
        let deadline = ContinuousClock.now + .seconds(timeout)
        var attempt = 0
        while true {
            var request = HTTPClientRequest(url: urls[(first + attempt) % urls.count] + "/v1/fixes")
            request.method = .POST
            request.headers.add(name: "content-type", value: "application/json")
            if let key { request.headers.add(name: "authorization", value: "Bearer \(key)") }
            request.body = .bytes(ByteBuffer(bytes: body))
            let failure: String
            do {
                let response = try await client.execute(request, timeout: .seconds(60))
                let answer = try await response.body.collect(upTo: 1 << 20)
                if response.status == .accepted { return (ContinuousClock.now - due).seconds }
                guard response.status.code >= 500 else {
                    throw CommandFailure("ingest answered \(response.status.code): \(String(buffer: answer))")
                }
                failure = "answered \(response.status.code): \(String(buffer: answer))"
            } catch let error as CommandFailure {
                throw error
            } catch {
                failure = String(describing: error)
            }
            attempt += 1
            retries.add()
            guard ContinuousClock.now < deadline else {
                throw CommandFailure("no ingest took a request within \(timeout) s (\(attempt) attempts); the last \(failure)")
            }
            // Each ingest in turn at once; once all were tried, a pause before the next round.
            if attempt % urls.count == 0 { try await Task.sleep(for: .milliseconds(100)) }
        }
    }

    /// The evaluator's count of evaluated, late and duplicate fixes.
    func evaluatedCount(client: HTTPClient, url: String) async throws -> Double {
        let response = try await client.execute(HTTPClientRequest(url: url), timeout: .seconds(10))
        let text = String(buffer: try await response.body.collect(upTo: 16 << 20))
        return text.split(separator: "\n")
            .filter { $0.hasPrefix("checkin_evaluator_fixes_total{") && !$0.contains("invalid") }
            .compactMap { $0.split(separator: " ").last.flatMap { Double($0) } }
            .reduce(0, +)
    }
}
