/// The payload as its synthesized `Codable` conformance writes it through
/// `WireJSON.encoder()`: `data`, `timestamp`, `type`.
extension WebhookPayload: WireJSONWritable {
    public func write(to json: inout JSONWriter) throws(EncodingError) {
        json.beginObject()
        try json.field("data", data)
        json.field("timestamp", timestamp)
        json.field("type", type)
        json.endObject()
    }
}
