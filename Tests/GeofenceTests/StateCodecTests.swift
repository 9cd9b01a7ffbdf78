import Foundation
import PropertyBased
import Shared
import Testing

@testable import Geofence

/// The stored state must come back exactly as it was written, from the binary form
/// and from the JSON of rows written before it, and bytes that are not a state must
/// be refused with an error, whatever they hold.
@Suite struct StateCodecTests {
    /// Reads back what was written, bit for bit, and reads the JSON form to the same state.
    static func expectRoundTrip(_ state: DeviceState, _ note: @autoclosure () -> String) throws {
        let bytes = state.binaryEncoded()
        let decoded = try DeviceState(storedBytes: bytes)
        #expect(decoded.binaryEncoded() == bytes, "bits changed: \(note())")
        if RandomState.hasNonFinite(state) { return }
        #expect(decoded == state, "\(note())")
        let json = try WireJSON.encoder().encode(state)
        #expect(try DeviceState(storedBytes: json) == state, "JSON: \(note())")
    }

    @Test func randomStatesRoundTrip() async {
        await propertyCheck(count: 400, input: Gen.int(in: 0...Int(Int32.max))) { seed in
            var rng = SplitMix(seed: UInt64(seed))
            let state = RandomState.state(rng: &rng, nonFinite: seed % 4 == 0)
            #expect(throws: Never.self, "seed \(seed)") { try Self.expectRoundTrip(state, "seed \(seed)") }
        }
    }

    /// States as the engine leaves them after each fix of a walk through overlapping
    /// zones: open check-ins, MRTs, sequential windows, beacons, resent fixes.
    @Test func engineStatesRoundTrip() async {
        await propertyCheck(count: 12, input: Gen.int(in: 0...Int(Int32.max))) { seed in
            var rng = SplitMix(seed: UInt64(seed))
            var trip = try! Scenario(zones: Self.walkZones(rng: &rng))
            for state in Self.walk(&trip, fixes: 150, rng: &rng) {
                #expect(throws: Never.self, "seed \(seed)") { try Self.expectRoundTrip(state, "seed \(seed)") }
            }
        }
    }

    /// The engine forgets only idle zones, so a device inside more than `rememberedZones`
    /// zones keeps them all; the reader must take such a state back.
    @Test func stateBeyondRememberedZonesRoundTrips() throws {
        let count = DeviceState.rememberedZones + 44
        let zones = (0..<count).map { circleZone("z\($0)", lat: 48.85, lon: 2.35, radius: 200) }
        var trip = try Scenario(zones: zones)
        #expect(trip.at(0, lat: 48.85, lon: 2.35).count == count)
        #expect(trip.state.zones.count == count)
        try Self.expectRoundTrip(trip.state, "\(count) zones")
    }

    /// What the evaluator's write-skip relies on: a resent fix changes nothing, and the
    /// stored state compares equal to the state after evaluation.
    @Test func unchangedStateComparesEqualToWhatWasStored() throws {
        var trip = try Scenario(zones: [circleZone("z", lat: 48.85, lon: 2.35, radius: 100, mrt: 60)])
        trip.at(0, lat: 48.85, lon: 2.35, fixId: "a")
        let stored = trip.state.binaryEncoded()
        var state = try DeviceState(storedBytes: stored)
        #expect(trip.engine.evaluate(Scenario.fix(at: 0, lat: 48.85, lon: 2.35, fixId: "a"), state: &state).outcome == .duplicate)
        #expect(try DeviceState(storedBytes: stored) == state)
        trip.state = state
        trip.at(10, lat: 48.85, lon: 2.35, fixId: "b")
        #expect(try DeviceState(storedBytes: stored) != trip.state)
    }

    /// The layout pinned: a change to it needs a new format tag.
    @Test func formatOneLayout() throws {
        #expect(DeviceState().binaryEncoded() == [0x01, 0x00, 0x00, 0x00, 0x00, 0x00])
        var state = DeviceState()
        state.lastTime = 1.5
        state.lastSequence = -2
        state.recentCursor = 3
        state.recentFixIds = [0x0102]
        var zone = ZoneMemory(zoneId: "é")
        zone.fenceInside = true
        zone.open = OpenCheckIn(checkInId: "c", time: -0.0, fenceId: nil, beaconId: "b")
        state.zones = [zone]
        let expected: [UInt8] =
            [0x01, 0x01] + [0, 0, 0, 0, 0, 0, 0xF8, 0x3F] + [0x03, 0x03] + [0x01, 0x02, 0x01, 0, 0, 0, 0, 0, 0]
            + [0x01, 0x45, 0x02, 0xC3, 0xA9, 0x01, 0x63, 0, 0, 0, 0, 0, 0, 0, 0x80, 0x01, 0x62]
        #expect(state.binaryEncoded() == expected)
        #expect(try DeviceState(storedBytes: expected) == state)
    }

    @Test func jsonRowsAreReadWithOrWithoutLeadingWhitespace() throws {
        let start = Scenario.start.timeIntervalSince1970
        for json in [#"{"t":\#(start),"ic":5,"n":7}"#, " \n\t\r{\"t\": \(start), \"ic\": 5, \"n\": 7}"] {
            let state = try DeviceState(storedBytes: Array(json.utf8))
            #expect(state.lastTime == start)
            #expect(state.recentCursor == 5)
            #expect(state.lastSequence == 7)
        }
        #expect(try DeviceState(storedBytes: Data("{}".utf8)) == DeviceState())
        #expect(throws: DecodingError.self) { try DeviceState(storedBytes: Array("[]".utf8)) }
    }

    /// A JSON row can hold more fix ids than the engine keeps; what is written of it
    /// must still be read.
    @Test func jsonRowWithTooManyFixIdsIsWrittenReadably() throws {
        let ids = (1...40).map(String.init).joined(separator: ",")
        let legacy = try DeviceState(storedBytes: Array(#"{"ids":[\#(ids)],"ic":4}"#.utf8))
        #expect(legacy.recentFixIds.count == 40)
        let state = try DeviceState(storedBytes: legacy.binaryEncoded())
        #expect(state.recentFixIds == Array(1...32))
        #expect(state.recentCursor == 4)
    }

    /// Both readers start the ring again when the cursor is outside it.
    @Test func cursorOutsideTheRingStartsAtZero() throws {
        var bytes = DeviceState().binaryEncoded()
        for cursor: UInt8 in [31, 32, 200, 255] {
            bytes[3] = cursor
            let expected = cursor < 32 ? Int(cursor) : 0
            #expect(try DeviceState(storedBytes: bytes).recentCursor == expected)
            #expect(try DeviceState(storedBytes: Array(#"{"ic":\#(cursor)}"#.utf8)).recentCursor == expected)
        }
        #expect(try DeviceState(storedBytes: Array(#"{"ic":-1}"#.utf8)).recentCursor == 0)
    }

    @Test func bytesThatAreNoStateAreRefused() throws {
        func reason(_ bytes: [UInt8]) -> StoredStateError.Reason? {
            do {
                _ = try DeviceState(storedBytes: bytes)
                return nil
            } catch let error as StoredStateError {
                return error.reason
            } catch {
                return nil
            }
        }
        let empty = DeviceState().binaryEncoded()
        #expect(reason([]) == .empty)
        #expect(reason([0x00]) == .unknownFormat(0))
        #expect(reason([0x02] + empty.dropFirst()) == .unknownFormat(2))
        #expect(reason(empty + [0]) == .trailingBytes)
        #expect(reason([0x01, 0x40, 0, 0, 0, 0]) == .unknownFlags(0x40))
        // Accuracy without a last fix.
        #expect(reason([0x01, 0x04, 0, 0, 0, 0]) == .unknownFlags(0x04))
        // A zone flag past the last, and a fence id for no open check-in.
        #expect(reason([0x01, 0x00, 0, 0, 0, 1, 0x80, 0]) == .unknownFlags(0x80))
        #expect(reason([0x01, 0x00, 0, 0, 0, 1, 0x20, 0]) == .unknownFlags(0x20))
        #expect(reason([0x01, 0x00] + [UInt8](repeating: 0xFF, count: 9) + [0x02, 0, 0, 0]) == .overlongVarint)
        #expect(reason([0x01, 0x00] + [UInt8](repeating: 0x80, count: 10) + [0x00, 0, 0, 0]) == .overlongVarint)
        // Ten bytes holding bit 63 is the longest varint there is.
        let longest: [UInt8] = [UInt8](repeating: 0xFF, count: 9) + [0x01]
        #expect(try DeviceState(storedBytes: [0x01, 0x00] + longest + [0, 0, 0]).lastSequence == Int.min)
        #expect(reason([0x01, 0x00, 0, 0, 33] + [UInt8](repeating: 0, count: 33 * 8) + [0]) == .tooMany(count: 33, limit: 32))
        // Zone id bytes that are not UTF-8.
        #expect(reason([0x01, 0x00, 0, 0, 0, 1, 0x00, 2, 0xC3, 0x28]) == .invalidUTF8)
        #expect(reason([0x01, 0x00, 0, 0, 0, 1, 0x00, 1, 0xFF]) == .invalidUTF8)
        #expect(reason([0x01, 0x00, 0, 0, 0, 1, 0x00, 3, 0xED, 0xA0, 0x80]) == .invalidUTF8)
    }

    /// Counts and lengths far beyond the bytes given are refused before anything is
    /// reserved for them (2^32 and 2^62 zones would trap or exhaust memory).
    @Test func hugeCountsAreRefusedBeforeAllocating() {
        func varint(_ value: UInt64) -> [UInt8] {
            var value = value, bytes: [UInt8] = []
            while value >= 0x80 {
                bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
                value >>= 7
            }
            return bytes + [UInt8(value)]
        }
        for count: UInt64 in [1 << 32, 1 << 62, UInt64.max, 3] {
            let ids: [UInt8] = [0x01, 0x00, 0, 0] + varint(count) + [0, 0, 0]
            #expect(throws: StoredStateError.self) { try DeviceState(storedBytes: ids) }
            let zones: [UInt8] = [0x01, 0x00, 0, 0, 0] + varint(count) + [0, 0, 0, 0]
            #expect(throws: StoredStateError.self) { try DeviceState(storedBytes: zones) }
            let zoneId: [UInt8] = [0x01, 0x00, 0, 0, 0, 1, 0x00] + varint(count) + [0x61]
            #expect(throws: StoredStateError.self) { try DeviceState(storedBytes: zoneId) }
        }
    }

    /// Every cut of a valid encoding is refused; random damage is refused or read as
    /// some state that itself round-trips. Neither may trap.
    @Test func truncatedOrDamagedBytesNeverTrap() async {
        await propertyCheck(count: 150, input: Gen.int(in: 0...Int(Int32.max))) { seed in
            var rng = SplitMix(seed: UInt64(seed))
            let bytes = RandomState.state(rng: &rng, nonFinite: true, maximumZones: 4).binaryEncoded()
            let accepted = (0..<bytes.count).filter { length in
                do {
                    _ = try DeviceState(storedBytes: bytes[0..<length])
                    return true
                } catch {
                    return !(error is StoredStateError)
                }
            }
            #expect(accepted.isEmpty, "seed \(seed): cuts not refused")
            for _ in 0..<200 {
                var damaged = bytes
                for _ in 0..<Int.random(in: 1...3, using: &rng) {
                    let at = Int.random(in: 1..<damaged.count, using: &rng)
                    if Bool.random(using: &rng) {
                        damaged[at] ^= 1 << UInt8.random(in: 0..<8, using: &rng)
                    } else {
                        damaged[at] = UInt8.random(in: 0...255, using: &rng)
                    }
                }
                guard let state = try? DeviceState(storedBytes: damaged) else { continue }
                let again = state.binaryEncoded()
                #expect((try? DeviceState(storedBytes: again))?.binaryEncoded() == again, "seed \(seed)")
            }
            for _ in 0..<50 {
                let noise = [0x01] + (0..<Int.random(in: 0...64, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
                _ = try? DeviceState(storedBytes: noise)
            }
        }
    }

    /// Reads through the non-contiguous path too.
    @Test func anyCollectionOfBytesIsRead() throws {
        var rng = SplitMix(seed: 7)
        let state = RandomState.state(rng: &rng)
        let bytes = state.binaryEncoded()
        #expect(try DeviceState(storedBytes: bytes.lazy.map { $0 }) == state)
        #expect(try DeviceState(storedBytes: Data(bytes)) == state)
        #expect(try DeviceState(storedBytes: ([0xAA] + bytes).dropFirst()) == state)
    }

    static func walkZones(rng: inout SplitMix) -> [ZoneDefinition] {
        var zones = (0..<25).map { i in
            let p = Scenario.offset(
                48.85, 2.35, metres: Double.random(in: 0...1500, using: &rng), bearing: Double.random(in: 0..<360, using: &rng))
            return circleZone(
                "zone-\(i)-東", lat: p.lat, lon: p.lon, radius: Double.random(in: 50...600, using: &rng),
                mrt: [0, 30, 600].randomElement(using: &rng)!, checkOut: Bool.random(using: &rng))
        }
        zones.append(
            ZoneDefinition(
                id: "shop", name: "Shop", checkOutEnabled: true,
                beacons: [BeaconDefinition(id: "b1", name: "Door", uuid: BeaconTests.uuid, major: 1, minor: 2, rssiThreshold: -70)]))
        return zones
    }

    /// The state after each fix of a random walk around the zones.
    static func walk(_ trip: inout Scenario, fixes: Int, rng: inout SplitMix) -> [DeviceState] {
        var states: [DeviceState] = []
        var position = (lat: 48.85, lon: 2.35)
        var time = 0.0
        for i in 0..<fixes {
            position = Scenario.offset(
                position.lat, position.lon, metres: Double.random(in: 0...250, using: &rng),
                bearing: Double.random(in: 0..<360, using: &rng))
            time += Double.random(in: 1...200, using: &rng)
            let beacons = Int.random(in: 0..<5, using: &rng) == 0 ? BeaconTests.seen(-60) : []
            let resend = i > 3 && Int.random(in: 0..<8, using: &rng) == 0
            trip.at(
                time, lat: position.lat, lon: position.lon,
                accuracy: Bool.random(using: &rng) ? Double.random(in: 3...80, using: &rng) : nil,
                speed: Bool.random(using: &rng) ? Double.random(in: 0...20, using: &rng) : nil,
                bearing: Bool.random(using: &rng) ? Double.random(in: 0..<360, using: &rng) : nil, beacons: beacons,
                fixId: resend ? "fix-\(i - 2)" : "fix-\(i)")
            states.append(trip.state)
        }
        return states
    }
}
