import Foundation
import Synchronization

/// Prints a measurement's summary as one indented JSON object with sorted keys, for scripts.
func printJSON(_ summary: some Encodable) throws {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
    print(String(decoding: try encoder.encode(summary), as: UTF8.self))
}

/// What a load run measured, printed as text or, with `--json`, as one JSON object.
struct LoadSummary: Encodable, Sendable {
    var fixes: Int
    var devices: Int
    var batch: Int
    /// Fixes per second the schedule asked for; nil for a closed loop.
    var openLoopRate: Int?
    var requests = RequestFigures(requests: 0, seconds: 0, latenciesSeconds: [])
    /// From the first request to the evaluator counting the last fix (with --metrics).
    var endToEndSeconds: Double?
    var webhooks: WebhookFigures?
    /// The events the trip decides by the engine offline (dense trips), times the endpoints:
    /// each must arrive once at each.
    var expectedWebhooks: Int?
    /// The pipeline's own per-stage latencies over the run (with --metrics).
    var stages: PipelineStages?
    /// With --hold-webhooks: how fast the notifier emptied the queue it was given at once.
    var drain: DrainFigures?
    /// CPU over the run (from the first request to the last webhook, or to the last fix evaluated).
    var cpu: CPUFigures?
    /// With --count-decisions: the run's fixes the evaluators decided, and those they never did.
    var decisions: DecisionCount?

    var endToEndFixesPerSecond: Double? { endToEndSeconds.map { Double(fixes) / $0 } }
    /// With --hold-webhooks: from the endpoints' enabling to the last webhook.
    var drainSeconds: Double? {
        guard let drain, let webhooks, webhooks.received > 0 else { return nil }
        return webhooks.secondsToLastWebhook - drain.releasedSeconds
    }
    var drainDeliveriesPerSecond: Double? {
        guard let drain, let drainSeconds else { return nil }
        return Double(drain.deliveries) / drainSeconds
    }

    enum CodingKeys: String, CodingKey {
        case fixes, devices, batch, openLoopRate, requests, endToEndSeconds, endToEndFixesPerSecond, webhooks
        case expectedWebhooks, stages, drain, drainSeconds, drainDeliveriesPerSecond, cpu, decisions
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(fixes, forKey: .fixes)
        try container.encode(devices, forKey: .devices)
        try container.encode(batch, forKey: .batch)
        try container.encodeIfPresent(openLoopRate, forKey: .openLoopRate)
        try container.encode(requests, forKey: .requests)
        try container.encodeIfPresent(endToEndSeconds, forKey: .endToEndSeconds)
        try container.encodeIfPresent(endToEndFixesPerSecond, forKey: .endToEndFixesPerSecond)
        try container.encodeIfPresent(webhooks, forKey: .webhooks)
        try container.encodeIfPresent(expectedWebhooks, forKey: .expectedWebhooks)
        try container.encodeIfPresent(stages?.figures, forKey: .stages)
        try container.encodeIfPresent(drain, forKey: .drain)
        try container.encodeIfPresent(drainSeconds, forKey: .drainSeconds)
        try container.encodeIfPresent(drainDeliveriesPerSecond, forKey: .drainDeliveriesPerSecond)
        try container.encodeIfPresent(cpu, forKey: .cpu)
        try container.encodeIfPresent(decisions, forKey: .decisions)
    }

    func printText() {
        let loop = openLoopRate.map { "open loop at \($0) fixes/s" } ?? "closed loop"
        print(
            String(
                format: "ingest: %d fixes in %d requests in %.2f s = %.0f fixes/s", fixes, requests.requests, requests.seconds,
                requests.fixesPerSecond(fixes))
                + " (\(loop)); "
                + String(
                    format: "request latency p50 %.1f ms, p99 %.1f ms, max %.1f ms", requests.p50Milliseconds,
                    requests.p99Milliseconds, requests.maxMilliseconds))
        if requests.retried > 0 {
            print("  \(requests.retried) attempts an ingest did not take (refused, closed, 5xx), each sent again until one did")
        }
        if let endToEndSeconds, let rate = endToEndFixesPerSecond {
            print(
                String(
                    format: "pipeline: %d fixes evaluated %.2f s after the first was sent = %.0f fixes/s end to end", fixes,
                    endToEndSeconds, rate))
        }
        if let drain, let drainSeconds, let rate = drainDeliveriesPerSecond {
            print(
                String(
                    format:
                        "notifier: %d deliveries to %d endpoint(s) queued %.2f s after the first fix was sent; from their enabling to the last webhook %.2f s = %.0f deliveries/s",
                    drain.deliveries, drain.endpoints, drain.queuedSeconds, drainSeconds, rate))
            print(
                "  (the webhooks' latencies below include the hold"
                    + (drain.receivedBeforeRelease > 0 ? "; \(drain.receivedBeforeRelease) came while the endpoints were held)" : ")"))
        }
        if let webhooks {
            if webhooks.received > 0 {
                print(
                    String(
                        format: "delivered: the last webhook %.2f s after the first fix was sent = %.0f fixes/s through to webhooks",
                        webhooks.secondsToLastWebhook, Double(fixes) / webhooks.secondsToLastWebhook))
            }
            print(
                String(
                    format:
                        "webhooks: %d received, signatures verified (%d refused, %d duplicates, %d without a fix of this run, %d before their fix's answer); fix accepted to webhook received p50 %.1f ms, p99 %.1f ms, p99.9 %.1f ms, max %.1f ms",
                    webhooks.received, webhooks.badSignatures, webhooks.duplicates, webhooks.unmatched, webhooks.beforeAnswer,
                    webhooks.p50Milliseconds, webhooks.p99Milliseconds, webhooks.p999Milliseconds, webhooks.maxMilliseconds))
            if webhooks.received > 0 {
                let fromSending = webhooks.fromSending
                print(
                    String(
                        format: "  from the fix's sending (the ingest's answer included): p50 %.1f ms, p99 %.1f ms, p99.9 %.1f ms",
                        fromSending.p50Milliseconds, fromSending.p99Milliseconds, fromSending.p999Milliseconds))
            }
            if let expectedWebhooks {
                print(
                    "exactly once: \(expectedWebhooks) webhooks due (the trip's events at each endpoint), \(webhooks.received) received"
                        + (webhooks.received == expectedWebhooks && webhooks.duplicates == 0 ? " (all, once each)" : " (MISMATCH)"))
            }
            print(
                String(
                    format:
                        "order: %d inversions (a device's webhook after a later one of the device at the same endpoint); longest gap between two webhooks %.2f s",
                    webhooks.inversions, webhooks.longestGapSeconds)
                    + (webhooks.unsequenced > 0 ? " (\(webhooks.unsequenced) webhooks without a sequence)" : ""))
            if webhooks.minutes.count > 1 {
                for minute in webhooks.minutes {
                    print(
                        String(
                            format: "  minute %d: %d webhooks, p50 %.1f ms, p99 %.1f ms, p99.9 %.1f ms; p99 from sending %.1f ms",
                            minute.minute, minute.webhooks, minute.p50Milliseconds, minute.p99Milliseconds,
                            minute.p999Milliseconds, minute.p99FromSendingMilliseconds))
                }
            }
        }
        if let decisions {
            print(
                "evaluated: \(decisions.decidedFixes) of the \(fixes) fixes have a decision record (\(decisions.records) records), "
                    + "\(decisions.lostFixes) lost"
                    + (decisions.lostFixIds.isEmpty ? "" : ": " + decisions.lostFixIds.joined(separator: " ")))
            for place in decisions.lostFixPlaces { print("  " + place) }
        }
        if let cpu { print(cpu.text) }
        if let stages = stages?.figures, !stages.isEmpty {
            print("stages (the pipeline's histograms, bucket estimates):")
            for stage in PipelineStages.order where stages[stage] != nil {
                let figures = stages[stage]!
                print(
                    "  " + stage.padding(toLength: 10, withPad: " ", startingAt: 0)
                        + String(
                            format: "%8d  p50 %8.1f ms  p99 %8.1f ms  p99.9 %8.1f ms", figures.count, figures.p50Milliseconds,
                            figures.p99Milliseconds, figures.p999Milliseconds))
            }
        }
    }
}

/// Request latency: closed loop from sending, open loop from when the request was due.
struct RequestFigures: Codable, Sendable {
    var requests: Int
    var seconds: Double
    var p50Milliseconds: Double
    var p99Milliseconds: Double
    var maxMilliseconds: Double
    /// Attempts an ingest did not take (refused or closed connection, 5xx), each sent again.
    var retried = 0

    init(requests: Int, seconds: Double, latenciesSeconds: [Double]) {
        let sorted = latenciesSeconds.sorted()
        func percentile(_ p: Double) -> Double {
            sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))] * 1000
        }
        self.requests = requests
        self.seconds = seconds
        self.p50Milliseconds = percentile(0.5)
        self.p99Milliseconds = percentile(0.99)
        self.maxMilliseconds = (sorted.last ?? 0) * 1000
    }

    func fixesPerSecond(_ fixes: Int) -> Double { seconds > 0 ? Double(fixes) / seconds : 0 }
}

/// The webhooks the load's own endpoint received, timed from their fix's acceptance.
struct WebhookFigures: Codable, Sendable {
    var received: Int
    /// From the first request to the last webhook: the load through the whole pipeline.
    var secondsToLastWebhook: Double
    var duplicates: Int
    var badSignatures: Int
    var unmatched: Int
    /// Webhooks whose fix was found by decoding their body, not by their id: 0 when the trip's
    /// events are computed beforehand and the pipeline decided each from the same fix.
    var namedByBody: Int
    /// Webhooks that came before the answer to their fix's request, timed from its sending only.
    var beforeAnswer: Int
    var p50Milliseconds: Double
    var p99Milliseconds: Double
    var p999Milliseconds: Double
    var maxMilliseconds: Double
    /// Timed from the fix's sending instead of its acceptance.
    var fromSending: PercentileFigures
    var minutes: [MinuteFigures] = []
    /// Webhooks (first arrivals) with a lower `data.sequence` than one of the same device that
    /// reached the same endpoint before them: 0 when each device's order is kept.
    var inversions = 0
    /// Webhooks whose body had no `sequence` to check the order by.
    var unsequenced = 0
    /// The longest time between two consecutive webhooks (any device, any endpoint), and when
    /// it ended (seconds since 1970).
    var longestGapSeconds = 0.0
    var longestGapEndedAt: Double?
}

struct PercentileFigures: Codable, Sendable {
    var p50Milliseconds: Double
    var p99Milliseconds: Double
    var p999Milliseconds: Double
}

/// The webhooks of the fixes sent in one minute of the run.
struct MinuteFigures: Codable, Sendable {
    var minute: Int
    var webhooks: Int
    var p50Milliseconds: Double
    var p99Milliseconds: Double
    var p999Milliseconds: Double
    var p99FromSendingMilliseconds: Double
}

/// A progress bar on standard error while fixes are sent, when it is a terminal.
final class LoadProgress: Sendable {
    let total: Int
    let enabled: Bool
    private let state = Mutex((sent: 0, done: false))

    init(total: Int, enabled: Bool) {
        self.total = total
        self.enabled = enabled
    }

    func sent(_ fixes: Int) {
        state.withLock { $0.sent += fixes }
    }

    func finish() {
        state.withLock { $0.done = true }
    }

    /// Redraws the bar five times a second until `finish`.
    func run(started: ContinuousClock.Instant, webhooks: @Sendable () -> Int) async {
        guard enabled else { return }
        while true {
            let (sent, done) = state.withLock { ($0.sent, $0.done) }
            let width = 30
            let filled = total == 0 ? width : min(width, sent * width / total)
            let seconds = max((ContinuousClock.now - started).seconds, 0.001)
            let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
            let line =
                "\r[\(bar)] "
                + String(
                    format: "%3d%%  %d/%d fixes  %.0f fixes/s  %d webhooks ", total == 0 ? 100 : sent * 100 / total, sent, total,
                    Double(sent) / seconds, webhooks())
            FileHandle.standardError.write(Data(line.utf8))
            if done || Task.isCancelled {
                FileHandle.standardError.write(Data("\n".utf8))
                return
            }
            try? await Task.sleep(for: .milliseconds(200))
        }
    }
}

/// A queue handed to the notifier whole (`--hold-webhooks`): timed from the first fix's sending.
struct DrainFigures: Codable, Sendable {
    var deliveries: Int
    var endpoints: Int
    /// When every delivery due was queued.
    var queuedSeconds: Double
    /// When the endpoints were enabled again.
    var releasedSeconds: Double
    /// Webhooks that came while the endpoints were held (should be none).
    var receivedBeforeRelease: Int
}
