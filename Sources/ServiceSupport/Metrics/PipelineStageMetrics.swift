import Foundation
import Metrics

/// How long a fix's webhook spends in each stage of the pipeline, as histograms of
/// `checkin_pipeline_stage_seconds{stage=…}`, so that an operator sees which stage holds
/// webhooks back. Each stage runs from one timestamp to the next:
///
/// - `evaluate`: the fix accepted (its record's time on the fixes topic) → its batch's
///   decisions written (the evaluator, every fix);
/// - `publish`: decided → the event acknowledged by the broker (the evaluator's relay);
/// - `queue`: published (the event record's time) → its delivery rows written (the notifier);
/// - `wait`: queued → the first attempt started (the notifier's claims and order);
/// - `send`: the first attempt started → answered 2xx (the partner);
/// - `total`: the fix accepted → its webhook acknowledged, for webhooks delivered at
///   their first attempt.
///
/// Stages are timed by the wall clocks of the processes that see their ends: across
/// hosts they include the hosts' clock difference.
package enum PipelineStage: String, Sendable, CaseIterable {
    case evaluate, publish, queue, wait, send, total

    package static let metricLabel = "checkin_pipeline_stage_seconds"

    /// The Kafka header that carries a fix's acceptance time (milliseconds since 1970)
    /// from the event that fix decided to the notifier.
    package static let fixAcceptedHeader = "checkin-fix-accepted-at"

    private static let timers: [PipelineStage: Metrics.Timer] = Dictionary(
        uniqueKeysWithValues: allCases.map { ($0, Metrics.Timer(label: metricLabel, dimensions: [("stage", $0.rawValue)])) })

    /// Records that this stage ran from `start` to `end` (nothing when `start` is unknown;
    /// a negative span, from clocks apart, counts as zero).
    package func record(from start: Date?, to end: Date = Date()) {
        guard let start else { return }
        Self.timers[self]?.recordNanoseconds(Int64(max(0, end.timeIntervalSince(start)) * 1_000_000_000))
    }

    package func record(_ duration: Duration) {
        Self.timers[self]?.record(duration: duration)
    }

    /// A fix's acceptance time as the header carries it.
    package static func headerValue(_ date: Date) -> [UInt8] {
        Array(String(Int64((date.timeIntervalSince1970 * 1000).rounded())).utf8)
    }

    package static func date(headerValue: [UInt8]?) -> Date? {
        guard let headerValue, let milliseconds = Int64(String(decoding: headerValue, as: UTF8.self)) else { return nil }
        return Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }
}
