import AsyncHTTPClient
import Foundation

/// The pipeline's per-stage latency histograms (`checkin_pipeline_stage_seconds`) as a
/// /metrics page shows them, so that a load run can report where its webhooks' time went.
struct PipelineStages: Sendable {
    /// Per stage, the cumulative count of each bucket's upper bound in seconds (`+Inf` as infinity).
    var buckets: [String: [Double: Double]] = [:]

    static let metric = "checkin_pipeline_stage_seconds_bucket{"
    /// The stages in the order a fix's webhook passes them; `total` is fix accepted to webhook acknowledged.
    static let order = ["evaluate", "publish", "queue", "wait", "send", "total"]

    static func scrape(client: HTTPClient, url: String) async throws -> PipelineStages {
        let response = try await client.execute(HTTPClientRequest(url: url), timeout: .seconds(10))
        return PipelineStages(metricsText: String(buffer: try await response.body.collect(upTo: 16 << 20)))
    }

    init(metricsText: String) {
        for line in metricsText.split(separator: "\n") where line.hasPrefix(Self.metric) {
            guard let close = line.lastIndex(of: "}"), let value = Double(line[line.index(after: close)...].trimmingCharacters(in: .whitespaces))
            else { continue }
            let labels = Self.labels(line[line.index(line.startIndex, offsetBy: Self.metric.count)..<close])
            guard let stage = labels["stage"], let bound = labels["le"].flatMap(Self.bound) else { continue }
            buckets[stage, default: [:]][bound, default: 0] += value
        }
    }

    private init(buckets: [String: [Double: Double]]) {
        self.buckets = buckets
    }

    /// What was observed after `earlier`.
    func since(_ earlier: PipelineStages) -> PipelineStages {
        var result: [String: [Double: Double]] = [:]
        for (stage, counts) in buckets {
            for (bound, count) in counts { result[stage, default: [:]][bound] = count - (earlier.buckets[stage]?[bound] ?? 0) }
        }
        return PipelineStages(buckets: result)
    }

    /// Per stage, its count and estimated quantiles in milliseconds (linear within a bucket, as
    /// Prometheus' `histogram_quantile` estimates them).
    var figures: [String: StageFigures] {
        buckets.compactMapValues { counts in
            let ordered = counts.sorted { $0.key < $1.key }
            guard let total = ordered.last?.value, total > 0 else { return nil }
            func quantile(_ q: Double) -> Double {
                let rank = q * total
                var lowerBound = 0.0
                var lowerCount = 0.0
                for (bound, count) in ordered {
                    if count >= rank {
                        guard bound.isFinite else { return lowerBound * 1000 }
                        let within = count - lowerCount
                        let fraction = within > 0 ? (rank - lowerCount) / within : 1
                        return (lowerBound + (bound - lowerBound) * fraction) * 1000
                    }
                    lowerBound = bound
                    lowerCount = count
                }
                return lowerBound * 1000
            }
            return StageFigures(
                count: Int(total), p50Milliseconds: quantile(0.5), p99Milliseconds: quantile(0.99),
                p999Milliseconds: quantile(0.999))
        }
    }

    private static func labels(_ text: Substring) -> [String: String] {
        var result: [String: String] = [:]
        for pair in text.split(separator: ",") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            guard parts.count == 2 else { continue }
            result[String(parts[0])] = String(parts[1].trimmingCharacters(in: CharacterSet(charactersIn: "\"")))
        }
        return result
    }

    private static func bound(_ text: String) -> Double? {
        text == "+Inf" ? .infinity : Double(text)
    }
}

/// One stage's latency over a run.
struct StageFigures: Codable, Sendable, Equatable {
    var count: Int
    var p50Milliseconds: Double
    var p99Milliseconds: Double
    var p999Milliseconds: Double
}
