/// A longitude/latitude pair in WGS84, in GeoJSON's order.
public struct Position: Sendable, Equatable, Hashable {
    public var lon: Double
    public var lat: Double

    public init(lon: Double, lat: Double) {
        self.lon = lon
        self.lat = lat
    }
}

extension Position: Codable {
    /// GeoJSON writes a position as `[lon, lat]` or `[lon, lat, altitude]`; altitude is ignored.
    public init(from decoder: any Decoder) throws {
        var container = try decoder.unkeyedContainer()
        guard let count = container.count, count >= 2, count <= 3 else {
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "a position is [longitude, latitude] (optionally with altitude)")
        }
        lon = try container.decode(Double.self)
        lat = try container.decode(Double.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.unkeyedContainer()
        try container.encode(lon)
        try container.encode(lat)
    }
}

/// The GeoJSON geometries a fence can have: a `Point` (a circle, with the
/// fence's radius), a `LineString` (a geoline), a `Polygon` or a `MultiPolygon`
/// (rings: the first is the outer boundary, the others are holes).
public enum GeoJSONGeometry: Sendable, Equatable, Hashable {
    case point(Position)
    case lineString([Position])
    case polygon([[Position]])
    case multiPolygon([[[Position]]])

    public var typeName: String {
        switch self {
        case .point: "Point"
        case .lineString: "LineString"
        case .polygon: "Polygon"
        case .multiPolygon: "MultiPolygon"
        }
    }
}

extension GeoJSONGeometry: Codable {
    enum CodingKeys: String, CodingKey { case type, coordinates }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let type = try container.decode(String.self, forKey: .type)
        switch type {
        case "Point": self = .point(try container.decode(Position.self, forKey: .coordinates))
        case "LineString": self = .lineString(try container.decode([Position].self, forKey: .coordinates))
        case "Polygon": self = .polygon(try container.decode([[Position]].self, forKey: .coordinates))
        case "MultiPolygon": self = .multiPolygon(try container.decode([[[Position]]].self, forKey: .coordinates))
        default:
            throw DecodingError.dataCorruptedError(
                forKey: .type, in: container,
                debugDescription: "geometry type '\(type)' is not one of Point, LineString, Polygon, MultiPolygon")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(typeName, forKey: .type)
        switch self {
        case .point(let position): try container.encode(position, forKey: .coordinates)
        case .lineString(let line): try container.encode(line, forKey: .coordinates)
        case .polygon(let rings): try container.encode(rings, forKey: .coordinates)
        case .multiPolygon(let polygons): try container.encode(polygons, forKey: .coordinates)
        }
    }
}
