import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Ingest
import Persistence
import Shared
import Testing

/// One project's zones cannot take the evaluators over: a document beyond the
/// project's quota of zones, fences or positions is a 413 problem and changes
/// nothing, and a project replaces its zones at most once per minimum interval (429
/// with `Retry-After`).
@Suite(.serialized) struct ZoneQuotaTests {
    static let quota = ZoneQuota(
        maximumZones: 2, maximumFences: 3, maximumPositions: 20, minimumReplaceInterval: .seconds(10))

    static func circle(_ id: String) -> FenceDefinition {
        FenceDefinition(id: id, geometry: .point(TestTrip.centre), radius: 50)
    }

    static func document(zones: Int, fencesPerZone: Int) -> ZonesDocument {
        ZonesDocument(
            zones: (0..<zones).map { z in
                ZoneDefinition(id: "zone-\(z)", name: "Zone \(z)", fences: (0..<fencesPerZone).map { circle("fence-\(z)-\($0)") })
            })
    }

    /// Runs `body` against the Ingest application of a fresh project under the test quota,
    /// with a function that replaces the project's zones through the API.
    func withQuotaIngest(
        _ body: @Sendable (PipelineHarness, _ put: @Sendable (ZonesDocument) async throws -> TestResponse) async throws -> Void
    ) async throws {
        let harness = PipelineHarness()
        try await harness.prepare()
        let configuration = IngestConfiguration(port: 0, topics: harness.topics, zoneQuota: Self.quota)
        try await withIngestApplication(harness, configuration: configuration) { _, client in
            try await body(harness) { document in
                try await client.execute(
                    uri: "/v1/zones", method: .put,
                    headers: [.authorization: "Bearer \(harness.managementKey)", .contentType: "application/json"],
                    body: ByteBuffer(bytes: Array(try WireJSON.encoder().encode(document))))
            }
        }
    }

    func storedZones(_ harness: PipelineHarness) async throws -> ZonesDocument {
        try await Database.withTemporaryClient(configuration: try harness.databaseConfiguration(), logger: harness.logger) {
            database in
            try await ZoneStore(database: database, logger: harness.logger).zones(projectId: harness.projectId)
        }
    }

    @Test func documentsBeyondTheQuotaAre413AndChangeNothing() async throws {
        try await withQuotaIngest { harness, put in
            let tooManyZones = try await put(Self.document(zones: 3, fencesPerZone: 1))
            let tooManyFences = try await put(Self.document(zones: 2, fencesPerZone: 2))
            let ring = (0...24).map { i in
                Position(lon: 144.96 + 0.001 * cos(Double(i) * .pi / 12), lat: -37.81 + 0.001 * sin(Double(i) * .pi / 12))
            }
            let tooManyPositions = try await put(
                ZonesDocument(zones: [
                    ZoneDefinition(
                        id: "park", name: "Park", fences: [FenceDefinition(id: "outline", geometry: .polygon([ring]))])
                ]))
            for (answer, expected) in [
                (tooManyZones, "3 zones, at most 2"), (tooManyFences, "4 fences, at most 3"),
                (tooManyPositions, "25 positions, at most 20"),
            ] {
                let body = String(buffer: answer.body)
                #expect(answer.status == .contentTooLarge, "\(body)")
                #expect(answer.headers[.contentType] == "application/problem+json")
                #expect(body.contains("zone-quota-exceeded") && body.contains(expected), "\(body)")
            }
            let stored = try await storedZones(harness)
            #expect(stored == harness.zones)
        }
    }

    @Test func aProjectReplacesItsZonesAtMostOncePerInterval() async throws {
        try await withQuotaIngest { harness, put in
            // The harness stored the project's zones moments ago: that counts as a replacement.
            var accepted = try await put(Self.document(zones: 1, fencesPerZone: 1))
            if accepted.status == .tooManyRequests, let wait = accepted.headers[.retryAfter].flatMap({ Int($0) }) {
                try await Task.sleep(for: .seconds(wait))
                accepted = try await put(Self.document(zones: 1, fencesPerZone: 1))
            }
            #expect(accepted.status == .ok, "\(String(buffer: accepted.body))")

            let tooSoon = try await put(Self.document(zones: 2, fencesPerZone: 1))
            #expect(tooSoon.status == .tooManyRequests)
            #expect(tooSoon.headers[.contentType] == "application/problem+json")
            #expect(String(buffer: tooSoon.body).contains("zones-replaced-too-soon"))
            let wait = try #require(tooSoon.headers[.retryAfter].flatMap { Int($0) })
            #expect((1...10).contains(wait))

            try await Task.sleep(for: .seconds(wait))
            let later = try await put(Self.document(zones: 2, fencesPerZone: 1))
            #expect(later.status == .ok, "\(String(buffer: later.body))")

            let stored = try await storedZones(harness)
            #expect(stored == Self.document(zones: 2, fencesPerZone: 1))
        }
    }
}
