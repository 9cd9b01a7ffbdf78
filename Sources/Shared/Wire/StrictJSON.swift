/// JSON as RFC 8259 defines it and nothing more, for request bodies: no trailing commas, no
/// comments, no bare values outside a document; read once for both the check and the names
/// of the top-level members, which a request type compares with its own.
public enum StrictJSON {
    /// The names of the document's top-level object's members, in document order, each once
    /// (empty when the document is not an object); nil when `bytes` is not one JSON document
    /// by RFC 8259.
    public static func topLevelMembers(of bytes: some Collection<UInt8>) -> [String]? {
        func read(_ buffer: UnsafeBufferPointer<UInt8>) -> [String]? {
            JSONDocument.read(buffer) { (scanner: inout JSONScanner) throws(JSONSyntaxError) -> [String] in
                scanner.allowsTrailingCommas = false
                var names: [String] = []
                if try scanner.valueKind() == .object {
                    if try scanner.enterObject() {
                        repeat {
                            let name = scanner.string(try scanner.readKey())
                            if !names.contains(name) { names.append(name) }
                            try scanner.skipValue()
                        } while try scanner.nextMember()
                    }
                } else {
                    try scanner.skipValue()
                }
                try scanner.expectEnd()
                return names
            }
        }
        if let result = bytes.withContiguousStorageIfAvailable(read) { return result }
        return Array(bytes).withUnsafeBufferPointer(read)
    }
}
