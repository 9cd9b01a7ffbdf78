import Foundation

/// Decision entries are written on the evaluator's hot path (a fix in six decides one in
/// a dense load), so they write their own JSON, byte for byte what `WireJSON.encoder()`
/// writes for them: keys in the order of their UTF-8 bytes, absent values left out.
extension DecisionEntry: WireJSONWritable {
    public func write(to json: inout JSONWriter) throws(EncodingError) {
        json.beginObject()
        try json.field("detail", detail)
        json.fieldIfPresent("fenceId", fenceId)
        json.field("outcome", outcome.rawValue)
        json.fieldIfPresent("reason", reason?.rawValue)
        json.fieldIfPresent("zoneId", zoneId)
        json.endObject()
    }
}

extension DecisionDetail: WireJSONWritable {
    public func write(to json: inout JSONWriter) throws(EncodingError) {
        json.beginObject()
        try json.fieldIfPresent("accuracy", accuracy)
        json.fieldIfPresent("afterZoneId", afterZoneId)
        json.fieldIfPresent("beaconId", beaconId)
        try json.fieldIfPresent("bearing", bearing)
        try json.fieldIfPresent("bearingFrom", bearingFrom)
        try json.fieldIfPresent("bearingTo", bearingTo)
        json.fieldIfPresent("checkInId", checkInId)
        json.fieldIfPresent("conditions", conditions)
        json.fieldIfPresent("earlierCheckInAt", earlierCheckInAt)
        try json.fieldIfPresent("gapSeconds", gapSeconds)
        json.fieldIfPresent("lastFixAt", lastFixAt)
        try json.fieldIfPresent("maxAccuracy", maxAccuracy)
        try json.fieldIfPresent("maxCrossingGap", maxCrossingGap)
        try json.fieldIfPresent("maxSpeed", maxSpeed)
        try json.fieldIfPresent("minSpeed", minSpeed)
        try json.fieldIfPresent("minimumRetriggerTime", minimumRetriggerTime)
        try json.fieldIfPresent("percentageReached", percentageReached)
        try json.fieldIfPresent("percentageRequired", percentageRequired)
        json.fieldIfPresent("reason", reason)
        json.fieldIfPresent("retriggerUntil", retriggerUntil)
        json.fieldIfPresent("rssi", rssi)
        json.fieldIfPresent("rssiThreshold", rssiThreshold)
        try json.fieldIfPresent("speed", speed)
        try json.fieldIfPresent("withinSeconds", withinSeconds)
        json.endObject()
    }
}

/// Records are written once per evaluated fix, kept as this JSON, and read back by the
/// decisions API with the `Codable` conformance: the two must agree byte for byte.
extension DecisionRecord: WireJSONWritable {
    public func write(to json: inout JSONWriter) throws(EncodingError) {
        json.beginObject()
        try json.field("entries", entries)
        json.fieldIfPresent("evaluatedAt", evaluatedAt)
        json.field("eventIds", eventIds)
        json.fieldIfPresent("fixId", fixId)
        try json.field("location", location)
        json.field("mode", mode.rawValue)
        json.field("timestamp", timestamp)
        json.endObject()
    }
}

extension DecisionLocation: WireJSONWritable {
    public func write(to json: inout JSONWriter) throws(EncodingError) {
        json.beginObject()
        try json.positionFields(lat: lat, lon: lon, accuracy: accuracy, speed: speed, bearing: bearing)
        json.endObject()
    }
}
