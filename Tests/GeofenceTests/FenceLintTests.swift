import Foundation
import Shared
import Testing

@testable import Geofence

/// The fence lint warns about fences of restart-capable zones under 500 m apart,
/// perimeter to perimeter, and about nothing else.
@Suite struct FenceLintTests {
    static let lat = 52.37, lon = 4.89

    /// A 100 m circle zone whose centre is `east` metres east of the reference point.
    static func circle(_ id: String, east: Double, conditions: ZoneConditions? = nil, enabled: Bool = true) -> ZoneDefinition {
        let p = Scenario.offset(lat, lon, metres: east)
        return circleZone(id, lat: p.lat, lon: p.lon, radius: 100, conditions: conditions, enabled: enabled)
    }

    static func lint(_ zones: [ZoneDefinition], limit: Int = 100) throws -> FenceLintReport {
        try FenceLint.check(ZonesDocument(zones: zones), limit: limit)
    }

    @Test(arguments: [(650.0, true), (699.0, true), (701.0, false), (2_000.0, false)])
    func circlesAreWarnedAboutUnder500MetresApart(centres: Double, warned: Bool) throws {
        let report = try Self.lint([Self.circle("a", east: 0), Self.circle("b", east: centres)])
        #expect(report.total == (warned ? 1 : 0))
        if warned {
            let warning = try #require(report.warnings.first)
            #expect(warning.zoneId == "a" && warning.fenceId == "a-f")
            #expect(warning.otherZoneId == "b" && warning.otherFenceId == "b-f")
            #expect(abs(warning.distance - (centres - 200)) <= 0.05)
            #expect(warning.description.contains("500 m"))
        }
    }

    @Test func overlappingFencesAreZeroApart() throws {
        let report = try Self.lint([Self.circle("a", east: 0), Self.circle("b", east: 50)])
        #expect(report.warnings.map(\.distance) == [0])
    }

    @Test func zonesThatRestartModeNeverTriggersAreLeftOut() throws {
        let zones = [
            Self.circle("a", east: 0),
            Self.circle("speed", east: 300, conditions: ZoneConditions(minSpeed: 1)),
            Self.circle("off", east: -300, enabled: false),
            ZoneDefinition(
                id: "line", name: "Line",
                fences: [
                    FenceDefinition(
                        id: "l",
                        geometry: .lineString([Position(lon: Self.lon, lat: Self.lat), Position(lon: Self.lon, lat: Self.lat + 0.001)]))
                ]),
        ]
        #expect(try Self.lint(zones).total == 0)
    }

    @Test func fencesOfOneZoneAreNotComparedWithEachOther() throws {
        var zone = Self.circle("a", east: 0)
        zone.fences.append(Self.circle("a", east: 300).fences[0])
        zone.fences[1].id = "a-g"
        #expect(try Self.lint([zone]).total == 0)
    }

    @Test func polygonsAreMeasuredByTheirEnclosingCircle() throws {
        let p = Scenario.offset(Self.lat, Self.lon, metres: 500)
        // A 200 m square: its enclosing circle is 141 m across the diagonal, so 500 - 100 - 141 = 259 m.
        let square = ZoneDefinition(
            id: "sq", name: "Square", fences: [FenceDefinition(id: "s", geometry: .polygon([square(lat: p.lat, lon: p.lon, side: 200)]))])
        let report = try Self.lint([Self.circle("a", east: 0), square])
        let warning = try #require(report.warnings.first)
        #expect(abs(warning.distance - (500 - 100 - 100 * 2.0.squareRoot())) < 0.5)
    }

    @Test func theFirstPairsAreListedAndAllAreCounted() throws {
        let zones = (0..<5).map { Self.circle("z\($0)", east: Double($0) * 10) }
        let report = try Self.lint(zones, limit: 3)
        #expect(report.total == 10)
        #expect(report.warnings.map { "\($0.zoneId)-\($0.otherZoneId)" } == ["z0-z1", "z0-z2", "z0-z3"])
    }

    @Test func anInvalidDocumentIsRefused() {
        var zone = Self.circle("a", east: 0)
        zone.fences[0].radius = -1
        #expect(throws: ZoneValidationError.self) { try Self.lint([zone]) }
    }
}
