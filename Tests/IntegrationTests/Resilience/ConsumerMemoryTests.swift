import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A worker's memory is bounded by the bytes of records it holds, not their count: a
/// producer writing records of nearly a megabyte each (here records that are no fixes, so
/// each is also copied to the dead-letter topic) cannot take it past its budget.
@Suite(.serialized) struct ConsumerMemoryTests {
    static let budget = 64 << 20

    @Test func residentMemoryStaysWithinTheByteBudgetWhileConsumingLargeRecords() async throws {
        let cluster = try EvaluatorCluster()
        try await withCleanUp({ await cluster.stopAll() }) {
            let budget = ProcessInfo.processInfo.environment["CHECKIN_TEST_BUFFER_BYTES"].flatMap(Int.init) ?? Self.budget
            cluster.environment["CHECKIN_CONSUMER_BUFFER_BYTES"] = String(budget)
            try await cluster.prepare()
            try cluster.startEvaluator()
            try await cluster.waitUntilReady(0)
            let pid = try #require(cluster.evaluators[0].processIdentifier)
            let before = try #require(ProcessMemory(pid: pid))

            // 400 records of 900 kB: 360 MB, more than five times the budget, waiting all at once
            // (produced while the worker is frozen), so that it could fetch as much as it liked.
            let record = [UInt8](repeating: UInt8(ascii: "x"), count: 900_000)
            let count = 400
            cluster.evaluators[0].signal(SIGSTOP)
            try await cluster.produceRaw(Array(repeating: record, count: count))
            cluster.evaluators[0].signal(SIGCONT)
            try await waitUntil("all \(count) records dead-lettered", within: .seconds(180)) {
                try await cluster.query(
                    "SELECT coalesce(sum(next_offset), 0)::int8 FROM consumer_offsets WHERE consumer_group = '\(cluster.harness.evaluatorGroup)'"
                ).first?.decode(Int64.self) == Int64(count)
            }
            let after = try #require(ProcessMemory(pid: pid))
            let grown = after.peakResidentBytes - before.residentBytes
            cluster.logger.info(
                "evaluator memory while consuming large records",
                metadata: [
                    "budget": "\(budget >> 20) MiB", "residentAtStart": "\(before.residentBytes >> 20) MiB",
                    "peakResident": "\(after.peakResidentBytes >> 20) MiB", "grownAtPeak": "\(grown >> 20) MiB",
                ])
            print(
                "evaluator: resident at start \(before.residentBytes >> 20) MiB, peak \(after.peakResidentBytes >> 20) MiB, "
                    + "budget \(budget >> 20) MiB")
            // The records held (the budget) plus what processing them copies (a batch's dead
            // letters in the producer until acknowledged): well under what 360 MB would take.
            #expect(grown < 2 * budget, "grew \(grown >> 20) MiB at its peak with a budget of \(budget >> 20) MiB")
        }
    }
}

/// A process's resident memory now and at its peak, from `/proc/PID/status`.
struct ProcessMemory {
    var residentBytes: Int
    var peakResidentBytes: Int

    init?(pid: Int32) {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        func kilobytes(_ field: String) -> Int? {
            guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(field + ":") }) else { return nil }
            return line.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first.flatMap { Int($0) }
        }
        guard let resident = kilobytes("VmRSS"), let peak = kilobytes("VmHWM") else { return nil }
        residentBytes = resident * 1024
        peakResidentBytes = peak * 1024
    }
}
