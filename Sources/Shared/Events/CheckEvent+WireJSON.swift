import Foundation

/// Events are written as their synthesized `Codable` conformances write them through
/// `WireJSON.encoder()`: every key in the order of its UTF-8 bytes, an absent optional
/// left out (`encodeIfPresent`), enums as their raw values.
extension CheckEvent: WireJSONWritable {
    public func write(to json: inout JSONWriter) throws(EncodingError) {
        json.beginObject()
        try json.fieldIfPresent("beacon", beacon)
        json.field("checkInId", checkInId)
        json.fieldIfPresent("checkInTime", checkInTime)
        json.fieldIfPresent("checkOutTime", checkOutTime)
        try json.fieldIfPresent("crossing", crossing)
        json.field("deviceId", deviceId)
        try json.fieldIfPresent("dwellSeconds", dwellSeconds)
        json.field("eventId", eventId)
        try json.fieldIfPresent("fence", fence)
        try json.field("location", location)
        json.field("mode", mode.rawValue)
        json.field("projectId", projectId)
        json.fieldIfPresent("reason", reason?.rawValue)
        json.field("sequence", sequence)
        json.field("type", type.rawValue)
        json.field("willCheckOut", willCheckOut)
        try json.field("zone", zone)
        json.endObject()
    }
}

extension ZoneSummary: WireJSONWritable {
    public func write(to json: inout JSONWriter) {
        json.beginObject()
        json.field("customData", customData)
        json.field("description", description)
        json.field("id", id)
        json.field("name", name)
        json.endObject()
    }
}

extension FenceSummary: WireJSONWritable {
    public func write(to json: inout JSONWriter) throws(EncodingError) {
        json.beginObject()
        json.field("description", description)
        try json.fieldIfPresent("geometry", geometry)
        json.fieldIfPresent("geometryOmitted", geometryOmitted)
        json.field("id", id)
        json.field("name", name)
        try json.fieldIfPresent("radius", radius)
        json.endObject()
    }
}

extension BeaconSummary: WireJSONWritable {
    public func write(to json: inout JSONWriter) {
        json.beginObject()
        json.fieldIfPresent("eddystoneId", eddystoneId)
        json.field("id", id)
        json.fieldIfPresent("major", major)
        json.fieldIfPresent("minor", minor)
        json.field("name", name)
        json.fieldIfPresent("uuid", uuid)
        json.endObject()
    }
}

extension EventLocation: WireJSONWritable {
    public func write(to json: inout JSONWriter) throws(EncodingError) {
        json.beginObject()
        try json.positionFields(lat: lat, lon: lon, accuracy: accuracy, speed: speed, bearing: bearing)
        json.field("timestamp", timestamp)
        json.endObject()
    }
}

extension JSONWriter {
    /// The members of a measured position, in the order of their names, as an event's and a
    /// decision record's locations both write them.
    mutating func positionFields(lat: Double, lon: Double, accuracy: Double?, speed: Double?, bearing: Double?)
        throws(EncodingError)
    {
        try fieldIfPresent("accuracy", accuracy)
        try fieldIfPresent("bearing", bearing)
        try field("lat", lat)
        try field("lon", lon)
        try fieldIfPresent("speed", speed)
    }
}

extension GeolineCrossing: WireJSONWritable {
    public func write(to json: inout JSONWriter) throws(EncodingError) {
        json.beginObject()
        json.field("direction", direction.rawValue)
        try json.field("lat", lat)
        try json.field("lon", lon)
        json.endObject()
    }
}
