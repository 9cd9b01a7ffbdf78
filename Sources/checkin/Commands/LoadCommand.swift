import ArgumentParser
import AsyncHTTPClient
import Foundation
import NIOCore
import Shared

struct LoadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "load",
        abstract: "Send generated device trips to an ingest service and report throughput and latency.",
        discussion: """
            Bounded: it sends exactly --fixes fixes and stops. With --metrics it then waits until the evaluator's
            checkin_evaluator_fixes_total has grown by that many, to measure the pipeline end to end.
            Meant for a pipeline on this machine (checkin dev or the three services).
            """)

    @Option(help: "Ingest base URL.") var url = "http://127.0.0.1:8080"
    @Option(help: "Device API key (omit when the ingest does not require one).") var key: String?
    @Option(help: "Project id written into each fix.") var project = "load"
    @Option(help: "How many fixes to send in all.") var fixes = 20_000
    @Option(help: "Distinct devices.") var devices = 200
    @Option(help: "Fixes per request.") var batch = 100
    @Option(help: "Requests in flight at once.") var concurrency = 8
    @Option(help: "A /metrics URL of the evaluator (or of checkin dev) to wait on.") var metrics: String?
    @Option(help: "Seconds to wait for the evaluator.") var timeout = 300

    func validate() throws {
        guard fixes > 0, devices > 0, batch > 0, concurrency > 0 else {
            throw ValidationError("--fixes, --devices, --batch and --concurrency must be positive")
        }
        guard batch <= 1000 else { throw ValidationError("--batch must be at most 1000 (the ingest limit)") }
    }

    func run() async throws {
        let client = HTTPClient.shared
        var before: Double?
        if let metrics { before = try await evaluatedCount(client: client, url: metrics) }
        let batches = stride(from: 0, to: fixes, by: batch).map { $0..<min($0 + batch, fixes) }
        let origin = Date().addingTimeInterval(-Double(fixes / devices + 1) * 5)
        let started = ContinuousClock.now
        let latencies = try await withThrowingTaskGroup(of: Double.self, returning: [Double].self) { group in
            var latencies: [Double] = []
            var next = batches.makeIterator()
            func submit(_ range: Range<Int>) {
                group.addTask { try await send(range, origin: origin, client: client) }
            }
            for _ in 0..<concurrency {
                if let range = next.next() { submit(range) }
            }
            while let latency = try await group.next() {
                latencies.append(latency)
                if let range = next.next() { submit(range) }
            }
            return latencies
        }
        let sent = ContinuousClock.now - started
        let sentSeconds = sent.seconds
        let sorted = latencies.sorted()
        func percentile(_ p: Double) -> Double { sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))] * 1000 }
        print(
            String(
                format: "ingest: %d fixes in %d requests in %.2f s = %.0f fixes/s; request latency p50 %.1f ms, p99 %.1f ms, max %.1f ms",
                fixes, batches.count, sentSeconds, Double(fixes) / sentSeconds, percentile(0.5), percentile(0.99),
                (sorted.last ?? 0) * 1000))

        guard let metrics, let before else { return }
        let deadline = ContinuousClock.now + .seconds(timeout)
        while try await evaluatedCount(client: client, url: metrics) - before < Double(fixes) {
            guard ContinuousClock.now < deadline else {
                throw ValidationError("the evaluator did not count \(fixes) more fixes within \(timeout) s")
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        let total = (ContinuousClock.now - started).seconds
        print(
            String(
                format: "pipeline: %d fixes evaluated %.2f s after the first was sent = %.0f fixes/s end to end", fixes, total,
                Double(fixes) / total))
    }

    /// Each device walks east at about 1.8 m/s (a fix every 5 s) along Flinders Street,
    /// through the example zones (`examples/zones.json`: the station, the bridge's gate
    /// line, the coffee kiosk), so that fixes decide check-ins and check-outs as a real
    /// crowd's would. Devices start up to 1.2 km apart along the street and up to 45 m
    /// apart across it; fixes of a device are in time order.
    func send(_ range: Range<Int>, origin: Date, client: HTTPClient) async throws -> Double {
        let items: [[String: Any]] = range.map { index in
            let device = index % devices
            let step = index / devices
            let start = 144.9630 + Double(device % 120) * 0.0001
            return [
                "projectId": project, "deviceId": "load-\(device)", "fixId": "load-\(device)-\(step)",
                "timestamp": RFC3339.format(origin.addingTimeInterval(Double(step) * 5)),
                "lat": -37.8183 + Double(device % 9 - 4) * 0.0001, "lon": start + Double(step) * 0.0001 - 0.006,
                "accuracy": 10,
            ]
        }
        var request = HTTPClientRequest(url: url + "/v1/fixes")
        request.method = .POST
        request.headers.add(name: "content-type", value: "application/json")
        if let key { request.headers.add(name: "authorization", value: "Bearer \(key)") }
        request.body = .bytes(ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: ["fixes": items])))
        let started = ContinuousClock.now
        let response = try await client.execute(request, timeout: .seconds(60))
        let body = try await response.body.collect(upTo: 1 << 20)
        guard response.status == .accepted else {
            throw ValidationError("ingest answered \(response.status.code): \(String(buffer: body))")
        }
        return (ContinuousClock.now - started).seconds
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
