/// Geometries as their hand-written `encode(to:)` writes them: `coordinates` before
/// `type` (sorted keys), a position as `[lon, lat]`.
extension GeoJSONGeometry: WireJSONWritable {
    public func write(to json: inout JSONWriter) throws(EncodingError) {
        json.beginObject()
        switch self {
        case .point(let position): try json.field("coordinates", position)
        case .lineString(let line): try json.field("coordinates", line)
        case .polygon(let rings): try json.field("coordinates", rings)
        case .multiPolygon(let polygons): try json.field("coordinates", polygons)
        }
        json.field("type", typeName)
        json.endObject()
    }
}

extension Position: WireJSONWritable {
    public func write(to json: inout JSONWriter) throws(EncodingError) {
        json.beginArray()
        try json.number(lon)
        try json.number(lat)
        json.endArray()
    }
}
