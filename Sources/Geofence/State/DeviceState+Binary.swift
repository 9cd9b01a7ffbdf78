import Foundation
import Shared

/// The stored form of a device state: read and written for every device of every
/// batch, where JSON coding cost the evaluator about a third of its CPU.
///
/// Layout of format 1 (little-endian; `f64` a Double's bit pattern, `uvar` an
/// unsigned LEB128 varint, `svar` a zigzag varint, `str` a `uvar` length and UTF-8,
/// `[...]` present only when its flag is set):
///
///     u8 0x01                    format tag: a control character, never the start of JSON
///     u8 flags                   0x01 lastTime, 0x02 lastFix, 0x04 its accuracy, 0x08 its speed,
///                                0x10 its bearing, 0x20 track
///     [f64 lastTime]
///     [f64 time, lat, lon; [f64 accuracy] [f64 speed] [f64 bearing]]   lastFix
///     [f64 time, lat, lon]       track
///     svar lastSequence
///     u8 recentCursor
///     uvar count, count × u64    recentFixIds, at most `rememberedFixIds`
///     uvar count, then per zone:
///         u8 flags               0x01 fenceInside, 0x02 beaconSeen, 0x04 open, 0x08 lastCheckIn,
///                                0x10 retriggerFrom, 0x20 open's fenceId, 0x40 open's beaconId
///         str zoneId
///         [f64 beaconSeen]
///         [str checkInId, f64 time, [str fenceId] [str beaconId]]   open
///         [f64 lastCheckIn] [f64 retriggerFrom]
///
/// Times and coordinates keep their exact bits, so `DeviceState(storedBytes:
/// state.binaryEncoded()) == state`: comparing the state read from the store with the
/// state after evaluation tells whether the row needs writing at all (the engine stores
/// no NaN, the one value unequal to itself).
extension DeviceState {
    /// The first byte of format 1. JSON starts with `{` or whitespace; a later format takes
    /// the next control character.
    static let binaryFormat: UInt8 = 0x01

    /// Reads a stored state: the binary form, or the JSON of rows written before it.
    public init(storedBytes: some Collection<UInt8>) throws {
        if let state = try storedBytes.withContiguousStorageIfAvailable({ try Self(stored: $0) }) {
            self = state
        } else {
            self = try Array(storedBytes).withUnsafeBufferPointer { try Self(stored: $0) }
        }
    }

    private init(stored bytes: UnsafeBufferPointer<UInt8>) throws {
        guard let first = bytes.first else { throw StoredStateError(.empty, at: 0) }
        switch first {
        case Self.binaryFormat:
            var reader = StateReader(bytes: bytes, offset: 1)
            try self.init(reading: &reader)
            guard reader.offset == bytes.count else { throw StoredStateError(.trailingBytes, at: reader.offset) }
        case 0x00...0x08, 0x0B, 0x0C, 0x0E...0x1F:
            // Whitespace aside, control characters are left for formats to come.
            throw StoredStateError(.unknownFormat(first), at: 0)
        default:
            self = try WireJSON.decoder().decode(DeviceState.self, from: Data(bytes))
        }
    }

    /// The binary form of format 1, what the store keeps.
    public func binaryEncoded() -> [UInt8] {
        var writer = StateWriter(capacity: binarySize)
        writer.byte(Self.binaryFormat)
        var flags: UInt8 = 0
        if lastTime != nil { flags |= 0x01 }
        if let lastFix {
            flags |= 0x02
            if lastFix.accuracy != nil { flags |= 0x04 }
            if lastFix.speed != nil { flags |= 0x08 }
            if lastFix.bearing != nil { flags |= 0x10 }
        }
        if track != nil { flags |= 0x20 }
        writer.byte(flags)
        if let lastTime { writer.double(lastTime) }
        if let lastFix {
            writer.double(lastFix.time)
            writer.double(lastFix.lat)
            writer.double(lastFix.lon)
            if let accuracy = lastFix.accuracy { writer.double(accuracy) }
            if let speed = lastFix.speed { writer.double(speed) }
            if let bearing = lastFix.bearing { writer.double(bearing) }
        }
        if let track {
            writer.double(track.time)
            writer.double(track.lat)
            writer.double(track.lon)
        }
        writer.varint(Self.zigzag(lastSequence))
        // What either reader makes of a cursor outside the ring.
        writer.byte((0..<Self.rememberedFixIds).contains(recentCursor) ? UInt8(recentCursor) : 0)
        // Only a hand-written JSON row holds more: the reader refuses them.
        let digests = recentFixIds.prefix(Self.rememberedFixIds)
        writer.varint(UInt64(digests.count))
        for digest in digests { writer.uint64(digest) }
        writer.varint(UInt64(zones.count))
        for zone in zones { zone.write(to: &writer) }
        assert(writer.bytes.count == binarySize)
        return writer.bytes
    }

    /// The exact size of `binaryEncoded()`, so that it is written into one allocation.
    private var binarySize: Int {
        let digests = min(recentFixIds.count, Self.rememberedFixIds)
        var size = 3 + 8 * digests + StateWriter.size(of: Self.zigzag(lastSequence))
        size += StateWriter.size(of: UInt64(digests)) + StateWriter.size(of: UInt64(zones.count))
        if lastTime != nil { size += 8 }
        if let lastFix {
            size += 24
            if lastFix.accuracy != nil { size += 8 }
            if lastFix.speed != nil { size += 8 }
            if lastFix.bearing != nil { size += 8 }
        }
        if track != nil { size += 24 }
        for zone in zones { size += zone.binarySize }
        return size
    }

    private init(reading reader: inout StateReader) throws {
        self.init()
        let flags = try reader.byte()
        guard flags & ~0x3F == 0 else { throw StoredStateError(.unknownFlags(flags), at: reader.offset - 1) }
        if flags & 0x01 != 0 { lastTime = try reader.double() }
        if flags & 0x02 != 0 {
            lastFix = try FixMemory(
                time: reader.double(), lat: reader.double(), lon: reader.double(),
                accuracy: flags & 0x04 != 0 ? reader.double() : nil,
                speed: flags & 0x08 != 0 ? reader.double() : nil,
                bearing: flags & 0x10 != 0 ? reader.double() : nil)
        } else if flags & 0x1C != 0 {
            throw StoredStateError(.unknownFlags(flags), at: reader.offset - 1)
        }
        if flags & 0x20 != 0 { track = try TrackPoint(time: reader.double(), lat: reader.double(), lon: reader.double()) }
        lastSequence = Self.unzigzag(try reader.varint())
        let cursor = Int(try reader.byte())
        // As the JSON reader does: a cursor outside the ring starts it again.
        recentCursor = cursor < Self.rememberedFixIds ? cursor : 0
        let idCount = try reader.count(atMost: Self.rememberedFixIds, bytesEach: 8)
        recentFixIds.reserveCapacity(idCount)
        for _ in 0..<idCount { recentFixIds.append(try reader.uint64()) }
        // `rememberedZones` is not a bound: a device inside more zones than that keeps them
        // all, as none is idle. The bytes left bound the count instead.
        let zoneCount = try reader.count(atMost: .max, bytesEach: ZoneMemory.smallestBinarySize)
        zones.reserveCapacity(zoneCount)
        for _ in 0..<zoneCount { zones.append(try ZoneMemory(reading: &reader)) }
    }

    private static func zigzag(_ value: Int) -> UInt64 {
        UInt64(bitPattern: Int64(value) << 1 ^ Int64(value) >> 63)
    }

    private static func unzigzag(_ value: UInt64) -> Int {
        Int(Int64(bitPattern: value >> 1) ^ -Int64(bitPattern: value & 1))
    }
}

extension FixMemory {
    init(time: Double, lat: Double, lon: Double, accuracy: Double?, speed: Double?, bearing: Double?) {
        self.time = time
        self.lat = lat
        self.lon = lon
        self.accuracy = accuracy
        self.speed = speed
        self.bearing = bearing
    }
}

extension ZoneMemory {
    /// A flags byte and an empty zone id.
    static let smallestBinarySize = 2

    fileprivate var binarySize: Int {
        var size = 1 + StateWriter.size(of: zoneId)
        if beaconSeen != nil { size += 8 }
        if let open {
            size += 8 + StateWriter.size(of: open.checkInId)
            if let fenceId = open.fenceId { size += StateWriter.size(of: fenceId) }
            if let beaconId = open.beaconId { size += StateWriter.size(of: beaconId) }
        }
        if lastCheckIn != nil { size += 8 }
        if retriggerFrom != nil { size += 8 }
        return size
    }

    fileprivate func write(to writer: inout StateWriter) {
        var flags: UInt8 = 0
        if fenceInside { flags |= 0x01 }
        if beaconSeen != nil { flags |= 0x02 }
        if let open {
            flags |= 0x04
            if open.fenceId != nil { flags |= 0x20 }
            if open.beaconId != nil { flags |= 0x40 }
        }
        if lastCheckIn != nil { flags |= 0x08 }
        if retriggerFrom != nil { flags |= 0x10 }
        writer.byte(flags)
        writer.string(zoneId)
        if let beaconSeen { writer.double(beaconSeen) }
        if let open {
            writer.string(open.checkInId)
            writer.double(open.time)
            if let fenceId = open.fenceId { writer.string(fenceId) }
            if let beaconId = open.beaconId { writer.string(beaconId) }
        }
        if let lastCheckIn { writer.double(lastCheckIn) }
        if let retriggerFrom { writer.double(retriggerFrom) }
    }

    fileprivate init(reading reader: inout StateReader) throws {
        let flags = try reader.byte()
        guard flags & 0x80 == 0, flags & 0x04 != 0 || flags & 0x60 == 0 else {
            throw StoredStateError(.unknownFlags(flags), at: reader.offset - 1)
        }
        self.init(zoneId: try reader.string())
        fenceInside = flags & 0x01 != 0
        if flags & 0x02 != 0 { beaconSeen = try reader.double() }
        if flags & 0x04 != 0 {
            open = try OpenCheckIn(
                checkInId: reader.string(), time: reader.double(),
                fenceId: flags & 0x20 != 0 ? reader.string() : nil,
                beaconId: flags & 0x40 != 0 ? reader.string() : nil)
        }
        if flags & 0x08 != 0 { lastCheckIn = try reader.double() }
        if flags & 0x10 != 0 { retriggerFrom = try reader.double() }
    }
}

/// Why stored bytes are not a device state, and where reading stopped.
public struct StoredStateError: Error, CustomStringConvertible, Equatable {
    public enum Reason: Equatable, Sendable {
        case empty
        case unknownFormat(UInt8)
        case truncated
        case unknownFlags(UInt8)
        case overlongVarint
        case tooMany(count: UInt64, limit: Int)
        case invalidUTF8
        case trailingBytes
    }

    public var reason: Reason
    /// Offset of the byte at fault in the stored bytes.
    public var offset: Int

    init(_ reason: Reason, at offset: Int) {
        self.reason = reason
        self.offset = offset
    }

    public var description: String {
        let what =
            switch reason {
            case .empty: "no bytes"
            case .unknownFormat(let tag): "unknown format tag 0x\(String(tag, radix: 16))"
            case .truncated: "truncated"
            case .unknownFlags(let flags): "presence flags 0x\(String(flags, radix: 16)) that mean nothing"
            case .overlongVarint: "a varint longer than 64 bits"
            case .tooMany(let count, let limit): "a count of \(count), more than the \(limit) kept"
            case .invalidUTF8: "a string that is not UTF-8"
            case .trailingBytes: "bytes after the end of the state"
            }
        return "stored device state: \(what) at byte \(offset)"
    }
}

/// Appends into an array sized in advance.
private struct StateWriter {
    var bytes: [UInt8]

    init(capacity: Int) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    mutating func byte(_ value: UInt8) { bytes.append(value) }

    mutating func uint64(_ value: UInt64) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    mutating func double(_ value: Double) { uint64(value.bitPattern) }

    mutating func varint(_ value: UInt64) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    mutating func string(_ value: String) {
        var value = value
        value.withUTF8 { utf8 in
            varint(UInt64(utf8.count))
            bytes.append(contentsOf: utf8)
        }
    }

    static func size(of value: UInt64) -> Int { max(1, (64 - value.leadingZeroBitCount + 6) / 7) }

    static func size(of value: String) -> Int {
        let count = value.utf8.count
        return size(of: UInt64(count)) + count
    }
}

/// Reads what `StateWriter` wrote, checking every length against the bytes left
/// before reading or allocating.
private struct StateReader {
    let bytes: UnsafeBufferPointer<UInt8>
    var offset: Int

    var remaining: Int { bytes.count - offset }

    private mutating func take(_ count: Int) throws -> Int {
        guard count <= remaining else { throw StoredStateError(.truncated, at: offset) }
        defer { offset += count }
        return offset
    }

    mutating func byte() throws -> UInt8 { bytes[try take(1)] }

    mutating func uint64() throws -> UInt64 {
        let from = try take(8)
        return UInt64(littleEndian: UnsafeRawBufferPointer(bytes).loadUnaligned(fromByteOffset: from, as: UInt64.self))
    }

    mutating func double() throws -> Double { Double(bitPattern: try uint64()) }

    mutating func varint() throws -> UInt64 {
        let start = offset
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let byte = try self.byte()
            // The tenth byte holds bit 63 alone.
            guard shift < 63 || byte <= 1 else { throw StoredStateError(.overlongVarint, at: start) }
            value |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return value }
            shift += 7
        }
    }

    /// A count of items of at least `bytesEach` bytes: refused when that many could not
    /// be in the bytes left, so that a corrupt count never reserves memory.
    mutating func count(atMost limit: Int, bytesEach: Int) throws -> Int {
        let start = offset
        let count = try varint()
        let fits = min(limit, remaining / bytesEach)
        guard count <= UInt64(fits) else {
            throw StoredStateError(
                count > UInt64(limit) ? .tooMany(count: count, limit: limit) : .truncated, at: start)
        }
        return Int(count)
    }

    mutating func string() throws -> String {
        let start = offset
        let length = try varint()
        guard length <= UInt64(remaining) else { throw StoredStateError(.truncated, at: offset) }
        let from = try take(Int(length))
        let utf8 = UnsafeBufferPointer(rebasing: bytes[from..<from + Int(length)])
        guard let text = String(validating: utf8, as: UTF8.self) else { throw StoredStateError(.invalidUTF8, at: start) }
        return text
    }
}
