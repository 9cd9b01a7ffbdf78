import Foundation

extension ZonesDocument {
    /// The members of a zones document that no field reads, by path (`zones[cafe].conditions.maxSpeeed`):
    /// a misspelt member would otherwise be dropped without a word, and its zone stored with
    /// the default it meant to change.
    ///
    /// Found by comparing the document's JSON with `document`, what it decoded to, written out
    /// again: every member a field reads comes back (defaults included), except those given as null.
    public static func unknownMembers(of document: ZonesDocument, in json: Data) throws -> [String] {
        let known = try JSONSerialization.jsonObject(with: try WireJSON.encoder().encode(document))
        let given = try JSONSerialization.jsonObject(with: json)
        var unknown: [String] = []
        collectUnknown(given: given, known: known, path: "", into: &unknown)
        return unknown
    }

    private static func collectUnknown(given: Any, known: Any, path: String, into unknown: inout [String]) {
        if let given = given as? [String: Any] {
            let known = known as? [String: Any] ?? [:]
            for key in given.keys.sorted() {
                let value = given[key]!
                let memberPath = path.isEmpty ? key : "\(path).\(key)"
                if let knownValue = known[key] {
                    collectUnknown(given: value, known: knownValue, path: memberPath, into: &unknown)
                } else if !(value is NSNull) {
                    unknown.append(memberPath)
                }
            }
        } else if let given = given as? [Any], let known = known as? [Any] {
            for (index, (element, knownElement)) in zip(given, known).enumerated() {
                // Zones and fences are named by their id, as the validator names them.
                let name = ((element as? [String: Any])?["id"] as? String) ?? String(index)
                collectUnknown(given: element, known: knownElement, path: "\(path)[\(name)]", into: &unknown)
            }
        }
    }
}
