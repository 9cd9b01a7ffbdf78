import Foundation
import PostgresNIO
import Shared

/// A project's zones document with the number of the version it is (0 for a project whose
/// zones were never replaced).
package struct VersionedZones: Sendable {
    package var version: Int64
    package var document: ZonesDocument

    package init(version: Int64, document: ZonesDocument) {
        self.version = version
        self.document = document
    }
}

/// One accepted zones document of a project, without the document: what a list of the
/// project's versions shows.
package struct ZonesVersionSummary: Sendable, Codable, Equatable {
    package var version: Int64
    package var createdAt: Date
    package var zoneCount: Int
    /// The id of the management key that made it (`key_…`); nil for a version made on the
    /// database (`checkin zones import` without the API) or before authors were kept.
    package var author: String?
    /// What its author said of it, if anything (`ZonesVersionMessage`).
    package var message: String?

    package init(version: Int64, createdAt: Date, zoneCount: Int, author: String? = nil, message: String? = nil) {
        self.version = version
        self.createdAt = createdAt
        self.zoneCount = zoneCount
        self.author = author
        self.message = message
    }
}

/// What a zones version may say of itself: a line a person reads in the list of versions, so
/// short and without control characters (a newline or an escape would garble the list).
package enum ZonesVersionMessage {
    package static let maximumLength = 200

    /// Why `text` cannot be a version's message; nil when it can.
    package static func problem(with text: String) -> String? {
        if text.count > maximumLength { return "is longer than \(maximumLength) characters" }
        if text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            return "contains a control character"
        }
        return nil
    }
}

/// A page of a project's zones versions, newest first.
package struct ZonesVersionPage: Sendable {
    package var versions: [ZonesVersionSummary]
    /// Where the next (older) page starts: the last version of this page; nil on the last page.
    package var nextCursor: Int64?
}

/// A replacement that named the version it replaces (`If-Match`), which is no longer the
/// current one: someone else replaced the zones in between.
package struct ZonesVersionMismatch: Error, Sendable, CustomStringConvertible {
    package var currentVersion: Int64

    package init(currentVersion: Int64) {
        self.currentVersion = currentVersion
    }

    package var description: String { "the project's zones are at version \(currentVersion)" }
}

extension ZoneStore {
    /// The project's versions older than `cursor` (all of them without), newest first.
    package func versions(projectId: String, before cursor: Int64?, limit: Int) async throws -> ZonesVersionPage {
        let rows = try await database.client.query(
            """
            SELECT version, created_at, zone_count, author, message FROM zone_document_versions
            WHERE project_id = \(projectId) AND version < \(cursor ?? Int64.max)
            ORDER BY version DESC LIMIT \(limit + 1)
            """, logger: logger)
        var versions: [ZonesVersionSummary] = []
        for try await (version, createdAt, zoneCount, author, message) in rows.decode((Int64, Date, Int, String?, String?).self) {
            versions.append(
                ZonesVersionSummary(version: version, createdAt: createdAt, zoneCount: zoneCount, author: author, message: message))
        }
        let more = versions.count > limit
        if more { versions.removeLast() }
        return ZonesVersionPage(versions: versions, nextCursor: more ? versions.last?.version : nil)
    }

    /// The document the project accepted as `version`; nil for a version it does not have.
    package func document(projectId: String, version: Int64) async throws -> ZonesDocument? {
        let rows = try await database.client.query(
            """
            SELECT document::text FROM zone_document_versions WHERE project_id = \(projectId) AND version = \(version)
            """, logger: logger)
        for try await text in rows.decode(String.self) {
            return try WireJSON.decoder().decode(ZonesDocument.self, from: Data(text.utf8))
        }
        return nil
    }

    /// The number of the project's newest version; 0 when it has none.
    func currentVersion(projectId: String, on connection: PostgresConnection) async throws -> Int64 {
        let rows = try await connection.query(
            "SELECT coalesce(max(version), 0) FROM zone_document_versions WHERE project_id = \(projectId)", logger: logger)
        for try await version in rows.decode(Int64.self) { return version }
        return 0
    }
}
