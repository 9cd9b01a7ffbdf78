import Foundation
import Logging
import NIOConcurrencyHelpers
import Persistence
import Shared
import Testing

extension StoreTests {
    /// The zones of generation `generation`: ids that name their generation, so a read that
    /// mixes two generations shows a zone without its fences or with another's.
    static func zonesDocument(generation: Int) -> ZonesDocument {
        ZonesDocument(
            zones: ["a", "b", "c"].map { name in
                ZoneDefinition(
                    id: "\(name)-\(generation)", name: name,
                    fences: (0..<3).map { index in
                        FenceDefinition(
                            id: "\(name)-\(generation)-fence-\(index)",
                            geometry: .point(Position(lon: Double(index), lat: Double(generation % 80))), radius: 50)
                    })
            })
    }

    /// A read during a replacement sees the old zones or the new ones, never the new
    /// zones with the old fences: reads race a writer that replaces the project's zones
    /// again and again, and each read must be one whole generation.
    @Test func zoneReadsNeverMixTwoReplacements() async throws {
        let logger = logger
        let projectId = "snapshot-" + UUID().uuidString
        let mixed = try await withDatabase { database in
            try await ProjectStore(database: database, logger: logger).createProject(id: projectId, name: "Snapshot")
            let zones = ZoneStore(database: database, logger: logger)
            try await zones.replaceZones(projectId: projectId, with: Self.zonesDocument(generation: 0))
            return try await withThrowingTaskGroup(of: [String].self) { tasks in
                let writing = NIOLockedValueBox(true)
                tasks.addTask {
                    for generation in 1...300 {
                        try await zones.replaceZones(projectId: projectId, with: Self.zonesDocument(generation: generation))
                    }
                    writing.withLockedValue { $0 = false }
                    return []
                }
                for reader in 0..<3 {
                    tasks.addTask {
                        var mixed: [String] = []
                        var reads = 0
                        // Until the writer is done, and at least a few reads each.
                        while reads < 20 || writing.withLockedValue({ $0 }) {
                            let document = try await zones.zones(projectId: projectId)
                            reads += 1
                            let generation = document.zones.first.flatMap { Int($0.id.split(separator: "-")[1]) }
                            if generation.map({ document != Self.zonesDocument(generation: $0) }) ?? true {
                                mixed.append("reader \(reader): \(document.zones.map { "\($0.id): \($0.fences.map(\.id))" })")
                            }
                        }
                        return mixed
                    }
                }
                var mixed: [String] = []
                for try await found in tasks { mixed += found }
                return mixed
            }
        }
        let first = mixed.first ?? ""
        #expect(mixed.count == 0, "reads mixed two replacements, the first: \(first)")
    }
}
