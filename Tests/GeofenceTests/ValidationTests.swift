import Foundation
import Shared
import Testing

@testable import Geofence

/// The zones document's validation names the zone, the fence and the problem.
@Suite struct ValidationTests {
    static func problems(_ geometry: GeoJSONGeometry, radius: Double? = nil) -> [ZoneProblem] {
        ZoneValidator.validate(
            ZonesDocument(zones: [
                ZoneDefinition(id: "z", name: "Z", fences: [FenceDefinition(id: "f", geometry: geometry, radius: radius)])
            ]))
    }

    static let square = [
        Position(lon: 0, lat: 0), Position(lon: 0.01, lat: 0), Position(lon: 0.01, lat: 0.01),
        Position(lon: 0, lat: 0.01), Position(lon: 0, lat: 0),
    ]

    @Test func validPolygonHasNoProblems() {
        #expect(Self.problems(.polygon([Self.square])).isEmpty)
    }

    @Test func unclosedRing() {
        let found = Self.problems(.polygon([Array(Self.square.dropLast()) + [Position(lon: 0, lat: 0.005)]]))
        #expect(found.count == 1)
        #expect(found.first?.zoneId == "z")
        #expect(found.first?.fenceId == "f")
        #expect(found.first?.problem.contains("not closed") == true)
    }

    @Test func tooFewPositions() {
        let found = Self.problems(.polygon([[Position(lon: 0, lat: 0), Position(lon: 1, lat: 0), Position(lon: 0, lat: 0)]]))
        #expect(found.map(\.problem) == ["ring 0 has 3 positions, a ring needs at least 4"])
    }

    @Test func bowTieIntersectsItself() {
        let bowTie = [
            Position(lon: 0, lat: 0), Position(lon: 1, lat: 1), Position(lon: 1, lat: 0), Position(lon: 0, lat: 1),
            Position(lon: 0, lat: 0),
        ]
        #expect(Self.problems(.polygon([bowTie])).first?.problem.contains("intersects itself") == true)
    }

    @Test func holeCrossingTheOuterRing() {
        let hole = [
            Position(lon: 0.005, lat: 0.005), Position(lon: 0.02, lat: 0.005), Position(lon: 0.02, lat: 0.006),
            Position(lon: 0.005, lat: 0.006), Position(lon: 0.005, lat: 0.005),
        ]
        #expect(Self.problems(.polygon([Self.square, hole])).first?.problem.contains("rings 0 and 1 intersect") == true)
    }

    @Test func largeSelfIntersectingRingIsFound() {
        var rng = SplitMix(seed: 1)
        var ring = RandomWorld.star(lat: 0, lon: 0, radius: 1000, vertices: 2000, rng: &rng)
        ring.swapAt(10, 1010)
        #expect(Self.problems(.polygon([ring])).contains { $0.problem.contains("intersects itself") })
        var fine = RandomWorld.star(lat: 0, lon: 0, radius: 1000, vertices: 2000, rng: &rng)
        fine[0] = fine[0]
        #expect(Self.problems(.polygon([fine])).isEmpty)
    }

    @Test func coordinatesMustBeFiniteAndInRange() {
        #expect(Self.problems(.point(Position(lon: 181, lat: 0)), radius: 10).first?.problem.contains("out of range") == true)
        #expect(Self.problems(.point(Position(lon: 0, lat: .nan)), radius: 10).first?.problem.contains("finite") == true)
        #expect(Self.problems(.lineString([Position(lon: 0, lat: 91), Position(lon: 0, lat: 0)])).count == 1)
    }

    @Test(arguments: [0.0, -5, .infinity, .nan])
    func radiusMustBePositive(radius: Double) {
        #expect(Self.problems(.point(Position(lon: 0, lat: 0)), radius: radius).map(\.problem) == ["radius must be more than 0 metres"])
    }

    @Test func pointNeedsARadius() {
        #expect(Self.problems(.point(Position(lon: 0, lat: 0))).count == 1)
    }

    @Test func tooManyVertices() {
        let ring = RandomWorld.wobbly(lat: 0, lon: 0, radius: 10_000, vertices: 10_001)
        #expect(Self.problems(.polygon([ring])).map(\.problem) == ["10002 positions, at most 10000 are allowed"])
    }

    @Test func zoneLevelProblems() {
        let zones = [
            ZoneDefinition(id: "a", name: "A", customData: Dictionary(uniqueKeysWithValues: (0..<51).map { ("k\($0)", "v") })),
            ZoneDefinition(id: "a", name: "A again", minimumRetriggerTime: -1),
            ZoneDefinition(
                id: "b", name: "B",
                conditions: ZoneConditions(
                    minSpeed: 5, maxSpeed: 1, bearing: BearingRange(from: 0, to: 400),
                    percentageCrossed: 120, sequential: SequentialCondition(afterZoneId: "nope", withinSeconds: 0)),
                activeSchedule: ActiveSchedule(timeZone: "Mars/Olympus", windows: [ScheduleWindow(days: [], start: "25:00", end: "10:00")]),
                beacons: [BeaconDefinition(id: "x", rssiThreshold: -80)]),
        ]
        let found = ZoneValidator.validate(ZonesDocument(zones: zones))
        let text = found.map(\.description).joined(separator: "\n")
        for fragment in [
            "customData has 51 keys", "used by another zone", "minimumRetriggerTime", "minSpeed is above",
            "bearing.to", "percentageCrossed", "afterZoneId 'nope'", "withinSeconds", "Mars/Olympus",
            "days is empty", "'25:00'", "uuid or an eddystoneId",
        ] {
            #expect(text.contains(fragment), "missing: \(fragment)")
        }
    }

    @Test func engineRefusesInvalidZones() {
        #expect(throws: ZoneValidationError.self) {
            try GeofenceEngine(projects: [
                ProjectZones(
                    projectId: "p",
                    zones: [
                        ZoneDefinition(id: "z", name: "Z", fences: [FenceDefinition(id: "f", geometry: .point(Position(lon: 0, lat: 0)))])
                    ])
            ])
        }
    }

    @Test func ringAroundAPoleIsRefused() {
        let ring = stride(from: -180.0, through: 180, by: 45).map { Position(lon: $0 == 180 ? -180 : $0, lat: 80) }
        #expect(Self.problems(.polygon([ring])).contains { $0.problem.contains("pole") })
    }
}
