import Foundation
import Testing

/// docs/configuration.md names every variable the program reads, and nothing it does not:
/// each `"CHECKIN_…"` string of the sources is a row's variable, and each row's variable is
/// read somewhere.
@Suite struct ConfigurationReferenceTests {
    static let root = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The quoted `CHECKIN_…` strings of every Swift file under Sources/.
    static func variablesRead() throws -> Set<String> {
        let pattern = try Regex(#""(CHECKIN_[A-Z0-9_]+)""#)
        var found: Set<String> = []
        let files = FileManager.default.enumerator(at: root.appending(path: "Sources"), includingPropertiesForKeys: nil)
        while let file = files?.nextObject() as? URL {
            guard file.pathExtension == "swift" else { continue }
            let text = try String(contentsOf: file, encoding: .utf8)
            for match in text.matches(of: pattern) {
                if let name = match.output[1].substring { found.insert(String(name)) }
            }
        }
        return found
    }

    /// The variables in the first column of the reference's table.
    static func variablesDocumented() throws -> Set<String> {
        let text = try String(contentsOf: root.appending(path: "docs/configuration.md"), encoding: .utf8)
        let pattern = try Regex(#"CHECKIN_[A-Z0-9_]+"#)
        var found: Set<String> = []
        for line in text.split(separator: "\n") where line.hasPrefix("| `CHECKIN_") {
            let firstCell = line.dropFirst().prefix { $0 != "|" }
            for match in firstCell.matches(of: pattern) { found.insert(String(firstCell[match.range])) }
        }
        return found
    }

    @Test func everyVariableReadIsDocumentedAndEveryDocumentedOneIsRead() throws {
        let read = try Self.variablesRead()
        let documented = try Self.variablesDocumented()
        #expect(read.count > 50, "the sources were not found: \(read.count) variables")
        #expect(read.subtracting(documented).sorted() == [], "read but not in docs/configuration.md")
        #expect(documented.subtracting(read).sorted() == [], "in docs/configuration.md but read nowhere")
    }
}
