/// JSON as RFC 8259 defines it and nothing more, for request bodies: no trailing commas, no
/// comments, no bare values outside a document; and the members of an object a request type
/// does not know, so that a misspelt member is refused rather than dropped in silence.
public enum StrictJSON {
    /// Whether `bytes` is one JSON document by RFC 8259.
    public static func isValid(_ bytes: some Collection<UInt8>) -> Bool {
        read(bytes) { scanner throws(JSONSyntaxError) in
            try scanner.skipValue()
            try scanner.expectEnd()
            return true
        } ?? false
    }

    /// The members of the document's top-level object that are not in `known`, in document
    /// order; empty when the document is not an object (the decoder says what it should be).
    public static func unknownMembers(of bytes: some Collection<UInt8>, known: Set<String>) -> [String] {
        read(bytes) { scanner throws(JSONSyntaxError) -> [String] in
            guard try scanner.valueKind() == .object else { return [] }
            var unknown: [String] = []
            if try scanner.enterObject() {
                repeat {
                    let name = scanner.string(try scanner.readKey())
                    if !known.contains(name) && !unknown.contains(name) { unknown.append(name) }
                    try scanner.skipValue()
                } while try scanner.nextMember()
            }
            return unknown
        } ?? []
    }

    private static func read<Result>(
        _ bytes: some Collection<UInt8>, _ body: (inout JSONScanner) throws(JSONSyntaxError) -> Result
    ) -> Result? {
        func strictly(_ buffer: UnsafeBufferPointer<UInt8>) -> Result? {
            JSONDocument.read(buffer) { (scanner: inout JSONScanner) throws(JSONSyntaxError) -> Result in
                scanner.allowsTrailingCommas = false
                return try body(&scanner)
            }
        }
        if let result = bytes.withContiguousStorageIfAvailable(strictly) { return result }
        return Array(bytes).withUnsafeBufferPointer(strictly)
    }
}
