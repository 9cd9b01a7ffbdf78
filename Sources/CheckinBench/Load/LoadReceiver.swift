import ArgumentParser
import CommandSupport
import Foundation
import Histogram
import NIOCore
import NIOHTTP1
import Notifier
import Persistence
import Shared
import Synchronization

/// When each fix of a load was sent and when the ingest accepted it (seconds since 1970; 0:
/// not yet), so that a webhook can be timed from the fix that decided it: from its acceptance
/// (what the pipeline took) and from its sending (what a device waits, the ingest's answer included).
final class FixTimes: Sendable {
    struct Times {
        var sent: Double
        var accepted: Double
    }

    private let times: Mutex<[Times]>

    init(count: Int) {
        times = Mutex([Times](repeating: Times(sent: 0, accepted: 0), count: count))
    }

    /// - Parameter time: when the request was due (open loop) or went out (closed loop).
    func recordSent(_ fixes: Range<Int>, at time: Double) {
        times.withLock { times in
            for index in fixes { times[index].sent = time }
        }
    }

    func recordAccepted(_ fixes: Range<Int>, at time: Double) {
        times.withLock { times in
            for index in fixes { times[index].accepted = time }
        }
    }

    /// nil before the fix was sent; `accepted` 0 while its answer has not come back (a webhook
    /// can overtake the answer to the request of the fix that decided it).
    func times(ofFix index: Int) -> Times? {
        times.withLock { times in times.indices.contains(index) && times[index].sent > 0 ? times[index] : nil }
    }
}

/// The load tool's partner: an endpoint of the project, registered for the run, that
/// verifies every webhook's signature as a partner must and times each event from its
/// fix's acceptance and from its sending (HDR histograms, microseconds).
final class LoadReceiver: Sendable {
    struct State {
        var latency = LoadReceiver.histogram()
        /// From the sending of the fix instead of its acceptance.
        var latencyFromSending = LoadReceiver.histogram()
        var received = 0
        var duplicates = 0
        var badSignatures = 0
        /// Events whose fix is not one of this run's.
        var unmatched = 0
        /// Events whose fix was found by decoding the body, their id not among those the trip
        /// decides offline: the example trip's (not computed beforehand), and any decided by
        /// another fix than offline (a device's fixes in requests in flight together can reach
        /// the pipeline out of order).
        var namedByBody = 0
        /// Events that came before the answer to their fix's request: timed from the sending only.
        var beforeAnswer = 0
        var seen: Set<String> = []
        var lastArrival = ContinuousClock.now
        /// The same latencies by the minute of the run their fix was sent in: whether a
        /// long run holds its pace.
        var byMinute: [Int: Histogram<UInt64>] = [:]
        var byMinuteFromSending: [Int: Histogram<UInt64>] = [:]
        /// The highest `sequence` received so far of each device at each endpoint ("endpoint/device").
        var highestSequence: [String: Int] = [:]
        var inversions = 0
        var unsequenced = 0
        /// When the previous webhook arrived (nil before the first), and the longest time between two.
        var previousArrival: Double?
        var longestGap = 0.0
        var longestGapEndedAt: Double?
    }

    static func histogram() -> Histogram<UInt64> {
        Histogram<UInt64>(highestTrackableValue: 3_600_000_000, numberOfSignificantValueDigits: .three)
    }

    let project: String
    let trip: LoadTrip
    /// The fix that decided each event the trip decides offline, by event id.
    let decidingFix: [String: Int]
    let fixTimes: FixTimes
    let secret: WebhookSecret
    private let state = Mutex(State())
    private let server: Mutex<LoadPartnerServer?> = Mutex(nil)
    private let endpointIds: Mutex<[String]> = Mutex([])
    /// When the first request went out (seconds since 1970): minute 0 of the run.
    private let runStart: Mutex<Double?> = Mutex(nil)

    private init(project: String, trip: LoadTrip, decidingFix: [String: Int], fixTimes: FixTimes, secret: WebhookSecret) {
        self.project = project
        self.trip = trip
        self.decidingFix = decidingFix
        self.fixTimes = fixTimes
        self.secret = secret
    }

    var received: Int { state.withLock { $0.received } }

    func runStarted(at time: Double) {
        runStart.withLock { $0 = time }
    }

    /// Starts the receiver on a free port of this machine and registers it as `endpoints`
    /// endpoints of `project` (each event is delivered to each of them).
    /// - Parameter held: the endpoints are disabled as soon as they are registered, so that
    ///   their deliveries queue until `releaseWhenQueued` enables them.
    static func start(
        project: String, trip: LoadTrip, decidingFix: [String: Int], fixTimes: FixTimes, endpoints: Int = 1, held: Bool = false
    ) async throws -> LoadReceiver {
        let secret = WebhookSecret.generate()
        let receiver = LoadReceiver(
            project: project, trip: trip, decidingFix: decidingFix, fixTimes: fixTimes, secret: try WebhookSecret(secret))
        let server = try await LoadPartnerServer.start { path, headers, body in receiver.receive(path: path, headers: headers, body: body) }
        receiver.server.withLock { $0 = server }
        let port = server.port
        let ids = try await withConfiguredWebhookStore { webhooks in
            var ids: [String] = []
            for index in 0..<endpoints {
                let id = try await webhooks.addEndpoint(
                    projectId: project, url: "http://127.0.0.1:\(port)/webhooks/\(index)", secrets: [secret]
                ).id
                if held { try await webhooks.disableEndpoint(id: id, projectId: project, reason: "held by checkin-bench load") }
                ids.append(id)
            }
            return ids
        }
        receiver.endpointIds.withLock { $0 = ids }
        return receiver
    }

    /// Waits until webhooks have stopped arriving for a while (the pipeline has delivered
    /// what the load decided), then returns the figures, timed from `started`, the first request.
    ///
    /// With `expected` known, fewer received is a pause, not the end, for up to `shortQuiet`:
    /// longer than the notifier's default gap hold, for which a device's delivery may wait
    /// when its predecessor is queued late.
    func waitUntilQuiet(
        since started: ContinuousClock.Instant, timeout: Duration, expected: Int? = nil, quiet: Duration = .seconds(5),
        shortQuiet: Duration = NotifierConfiguration().gapHold + .seconds(30)
    ) async throws -> WebhookFigures {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let (last, received) = state.withLock { ($0.lastArrival, $0.received) }
            let isShort = expected.map { received < $0 } ?? false
            if ContinuousClock.now - last >= (isShort ? shortQuiet : quiet) { break }
            try await Task.sleep(for: .milliseconds(200))
        }
        return state.withLock { state in
            func milliseconds(_ percentile: Double, of histogram: Histogram<UInt64>) -> Double {
                histogram.totalCount == 0 ? 0 : Double(histogram.valueAtPercentile(percentile)) / 1000
            }
            return WebhookFigures(
                received: state.received, secondsToLastWebhook: (state.lastArrival - started).seconds, duplicates: state.duplicates,
                badSignatures: state.badSignatures,
                unmatched: state.unmatched, namedByBody: state.namedByBody, beforeAnswer: state.beforeAnswer,
                p50Milliseconds: milliseconds(50, of: state.latency), p99Milliseconds: milliseconds(99, of: state.latency),
                p999Milliseconds: milliseconds(99.9, of: state.latency),
                maxMilliseconds: state.latency.totalCount == 0 ? 0 : Double(state.latency.max) / 1000,
                fromSending: PercentileFigures(
                    p50Milliseconds: milliseconds(50, of: state.latencyFromSending),
                    p99Milliseconds: milliseconds(99, of: state.latencyFromSending),
                    p999Milliseconds: milliseconds(99.9, of: state.latencyFromSending)),
                // Every timed webhook is in its minute from sending; those before their answer only there.
                minutes: state.byMinuteFromSending.sorted { $0.key < $1.key }.map { minute, fromSending in
                    let accepted = state.byMinute[minute] ?? Self.histogram()
                    return MinuteFigures(
                        minute: minute, webhooks: Int(fromSending.totalCount),
                        p50Milliseconds: milliseconds(50, of: accepted),
                        p99Milliseconds: milliseconds(99, of: accepted),
                        p999Milliseconds: milliseconds(99.9, of: accepted),
                        p99FromSendingMilliseconds: milliseconds(99, of: fromSending))
                },
                inversions: state.inversions, unsequenced: state.unsequenced, longestGapSeconds: state.longestGap,
                longestGapEndedAt: state.longestGapEndedAt)
        }
    }

    /// Waits until `expected` deliveries are queued for the run's (disabled) endpoints, then
    /// enables them: from then on the notifier has the whole queue before it. `started` is
    /// the first request's instant, from which the returned figures are timed.
    ///
    /// One connection for the whole wait (opening one also checks the migrations), and a look
    /// every quarter second: each look counts every pending delivery (about 50 ms at 100,000).
    func releaseWhenQueued(expected: Int, since started: ContinuousClock.Instant, timeout: Duration) async throws -> DrainFigures {
        let ids = Set(endpointIds.withLock { $0 })
        let deadline = ContinuousClock.now + timeout
        let queued = try await withConfiguredDatabase { database, logger in
            let operations = OperationsStore(database: database, logger: logger)
            while true {
                let queued = try await operations.deliveryBacklog()
                    .filter { ids.contains($0.endpointId) }.reduce(0) { $0 + $1.pending + $1.retrying }
                if queued >= expected { return queued }
                guard ContinuousClock.now < deadline else {
                    throw CommandFailure("only \(queued) of \(expected) deliveries were queued within the timeout")
                }
                try await Task.sleep(for: .milliseconds(250))
            }
        }
        let queuedSeconds = (ContinuousClock.now - started).seconds
        let project = project
        let receivedBefore = received
        try await withConfiguredWebhookStore { webhooks in
            for id in ids { try await webhooks.enableEndpoint(id: id, projectId: project) }
        }
        // Quiet is counted from here: nothing could arrive while the endpoints were held.
        state.withLock { $0.lastArrival = .now }
        return DrainFigures(
            deliveries: queued, endpoints: ids.count, queuedSeconds: queuedSeconds, releasedSeconds: (ContinuousClock.now - started).seconds,
            receivedBeforeRelease: receivedBefore)
    }

    /// Removes the run's endpoint and stops the server.
    func stop() async throws {
        let ids = endpointIds.withLock { $0 }
        if !ids.isEmpty {
            let project = project
            try await withConfiguredWebhookStore { webhooks in
                for id in ids { try await webhooks.removeEndpoint(id: id, projectId: project) }
            }
        }
        try await server.withLock { $0 }?.stop()
    }

    /// One webhook: verified as a partner must, then timed from its fix (on the connection's
    /// event loop: it does little, and takes no hop to another thread). The fix is found by
    /// the webhook's id where the trip's events are known; decoding the body (Foundation's
    /// `JSONDecoder`) took a fifth of the partner's time, which a partner on another machine
    /// would leave to the pipeline.
    private func receive(path: String, headers: HTTPHeaders, body: ByteBuffer) -> HTTPResponseStatus {
        let arrived = Date().timeIntervalSince1970
        let id = headers.first(name: WebhookSignature.idHeader)
        let bytes = body.readableBytesView
        do {
            try WebhookSignature.verify(
                id: id, timestamp: headers.first(name: WebhookSignature.timestampHeader),
                signatureHeader: headers.first(name: WebhookSignature.signatureHeader), body: bytes, secret: secret)
        } catch {
            state.withLock { $0.badSignatures += 1 }
            return .unauthorized
        }
        let knownFix = id.flatMap { decidingFix[$0] }
        let fixIndex = knownFix ?? fixIndexInBody(bytes)
        let fixTimes = fixIndex.flatMap { self.fixTimes.times(ofFix: $0) }
        let runStart = runStart.withLock { $0 }
        let endpoint = path.split(separator: "/").last.map(String.init) ?? ""
        let order = Self.deviceAndSequence(bytes)
        state.withLock { state in
            state.lastArrival = .now
            if let previous = state.previousArrival, arrived - previous > state.longestGap {
                state.longestGap = arrived - previous
                state.longestGapEndedAt = arrived
            }
            state.previousArrival = arrived
            guard state.seen.insert(endpoint + "/" + (id ?? "")).inserted else {
                state.duplicates += 1
                return
            }
            state.received += 1
            if let (device, sequence) = order {
                let key = endpoint + "/" + device
                if let highest = state.highestSequence[key], sequence < highest {
                    state.inversions += 1
                } else {
                    state.highestSequence[key] = sequence
                }
            } else {
                state.unsequenced += 1
            }
            if knownFix == nil { state.namedByBody += 1 }
            guard let fixTimes else {
                state.unmatched += 1
                return
            }
            let microsecondsFromSending = UInt64(max(0, arrived - fixTimes.sent) * 1_000_000)
            _ = state.latencyFromSending.record(microsecondsFromSending)
            let minute = runStart.map { max(0, Int((fixTimes.sent - $0) / 60)) }
            if let minute { _ = state.byMinuteFromSending[minute, default: Self.histogram()].record(microsecondsFromSending) }
            if fixTimes.accepted > 0 {
                let microseconds = UInt64(max(0, arrived - fixTimes.accepted) * 1_000_000)
                _ = state.latency.record(microseconds)
                if let minute { _ = state.byMinute[minute, default: Self.histogram()].record(microseconds) }
            } else {
                state.beforeAnswer += 1
            }
        }
        return .noContent
    }

    /// The event's `deviceId` and `sequence`, found in the body's bytes without decoding it: the
    /// payload is written with its keys in order (`WebhookPayload`, `CheckEvent`), and the first
    /// `"deviceId":"` and `"sequence":` are the event's (only zone names and custom data follow,
    /// and quotes inside their strings are escaped).
    static func deviceAndSequence(_ bytes: ByteBufferView) -> (device: String, sequence: Int)? {
        let body = Array(bytes)
        func end(of key: String) -> Int? {
            let pattern = Array(key.utf8)
            guard body.count >= pattern.count else { return nil }
            for start in 0...(body.count - pattern.count) where body[start] == pattern[0] {
                if body[start..<start + pattern.count].elementsEqual(pattern) { return start + pattern.count }
            }
            return nil
        }
        guard let deviceStart = end(of: #""deviceId":""#), let sequenceStart = end(of: #""sequence":"#),
            let deviceEnd = body[deviceStart...].firstIndex(of: UInt8(ascii: "\""))
        else { return nil }
        let digits = body[sequenceStart...].prefix { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
        guard let sequence = Int(String(decoding: digits, as: UTF8.self)) else { return nil }
        return (String(decoding: body[deviceStart..<deviceEnd], as: UTF8.self), sequence)
    }

    private func fixIndexInBody(_ bytes: ByteBufferView) -> Int? {
        let payload = try? WireJSON.decoder().decode(FixReference.self, from: Data(bytes))
        return payload.flatMap { trip.fixIndex(deviceId: $0.data.deviceId, time: $0.data.location.timestamp) }
    }
}

/// The part of a webhook's payload that names the fix which decided it: all the receiver
/// decodes, so that the partner's share of the machine stays small beside the pipeline's.
private struct FixReference: Decodable {
    struct Event: Decodable {
        struct Location: Decodable {
            var timestamp: Date
        }
        var deviceId: String
        var location: Location
    }
    var data: Event
}
