import Foundation
import Logging
import Persistence
import Testing

/// A key's last use is the time of the use, never later than the key's end, and never
/// moves back.
@Suite struct KeyUseTests {
    let logger = Logger(label: "test.key-use")

    @Test func aUseIsNeverRecordedAfterTheKeyExpired() async throws {
        try await withMigratedDatabase(url: TestEnvironment.databaseURL, logger: logger) { database in
            let projects = ProjectStore(database: database, logger: logger)
            let project = "key-use-\(UUID().uuidString.prefix(8))"
            try await projects.createProject(id: project, name: project)
            let first = try await projects.issueKey(projectId: project, kind: .management)
            _ = try await projects.issueKey(projectId: project, kind: .management)
            guard case .rotated(_, let old) = try await projects.rotateKey(id: first.record.id, projectId: project, overlap: .seconds(60)),
                let expiresAt = old.expiresAt
            else { throw TestFailure("the rotated key has no end") }

            // Noted in one process a moment before its end, written by a clock that runs later.
            try await projects.recordUse([old.id: expiresAt.addingTimeInterval(30)])
            let recorded = try #require(try await projects.keys(projectId: project).first { $0.id == old.id }?.lastUsedAt)
            #expect(abs(recorded.timeIntervalSince(expiresAt)) < 0.001, "last used \(recorded), expires \(expiresAt)")

            // An earlier use, written later, does not move it back.
            try await projects.recordUse([old.id: expiresAt.addingTimeInterval(-50)])
            let kept = try #require(try await projects.keys(projectId: project).first { $0.id == old.id }?.lastUsedAt)
            #expect(abs(kept.timeIntervalSince(expiresAt)) < 0.001)
        }
    }
}
