import Foundation

/// A fix as its hand-written `encode(to:)` writes it through `WireJSON.encoder()`: keys
/// in the order of their UTF-8 bytes, `mode` always, `beacons` only when there are some.
extension Fix: WireJSONWritable {
    public func write(to json: inout JSONWriter) throws(EncodingError) {
        json.beginObject()
        try json.fieldIfPresent("accuracy", accuracy)
        try json.fieldIfPresent("altitude", altitude)
        if !beacons.isEmpty { try json.field("beacons", beacons) }
        try json.fieldIfPresent("bearing", bearing)
        json.field("deviceId", deviceId)
        json.fieldIfPresent("fixId", fixId)
        try json.field("lat", lat)
        try json.field("lon", lon)
        json.field("mode", mode.rawValue)
        json.field("projectId", projectId)
        json.fieldIfPresent("source", source?.rawValue)
        try json.fieldIfPresent("speed", speed)
        json.field("timestamp", timestamp)
        json.endObject()
    }
}

extension BeaconSighting: WireJSONWritable {
    public func write(to json: inout JSONWriter) {
        json.beginObject()
        json.fieldIfPresent("eddystoneId", eddystoneId)
        json.fieldIfPresent("major", major)
        json.fieldIfPresent("minor", minor)
        json.field("rssi", rssi)
        json.fieldIfPresent("uuid", uuid)
        json.endObject()
    }
}
