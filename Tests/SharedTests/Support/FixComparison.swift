import Foundation
import Shared

/// Equality of decoding outcomes down to the bit: `Fix ==` takes -0.0 for 0.0 and
/// compares strings by canonical equivalence, so it would let through a decoder that
/// gets a sign bit or a combining character wrong.
enum FixComparison {
    static func same(_ first: Result<Fix, InvalidFix>, _ second: Result<Fix, InvalidFix>) -> Bool {
        switch (first, second) {
        case (.success(let a), .success(let b)): return same(a, b)
        case (.failure(let a), .failure(let b)): return a == b
        default: return false
        }
    }

    static func same(_ first: [Fix], _ second: [Fix]) -> Bool {
        first.count == second.count && zip(first, second).allSatisfy { same($0, $1) }
    }

    static func same(_ a: Fix, _ b: Fix) -> Bool {
        func bits(_ fix: Fix) -> [UInt64?] {
            [fix.lat, fix.lon, fix.accuracy, fix.speed, fix.bearing, fix.altitude, fix.timestamp.timeIntervalSince1970].map {
                $0?.bitPattern
            }
        }
        func texts(_ fix: Fix) -> [[UInt8]?] {
            [fix.projectId, fix.deviceId, fix.fixId].map { $0.map { Array($0.utf8) } }
                + fix.beacons.flatMap { [$0.uuid, $0.eddystoneId].map { $0.map { Array($0.utf8) } } }
        }
        return a == b && bits(a) == bits(b) && texts(a) == texts(b)
    }

    /// The document for a failure message: as text when it is UTF-8, else as bytes.
    static func describe(_ document: [UInt8]) -> String {
        if let text = String(validating: document, as: UTF8.self) { return text.debugDescription }
        return document.map { String($0, radix: 16) }.joined(separator: " ")
    }
}
