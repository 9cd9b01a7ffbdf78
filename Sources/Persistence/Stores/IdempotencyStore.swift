import Foundation
import Logging
import PostgresNIO
import Shared

/// The answers to requests sent with an `Idempotency-Key`, per client scope (the operator,
/// or a project). The first request claims its key with a row that has no answer yet; the
/// answer is stored when it is known; a request with the same key gets that answer again.
/// Bodies are stored sealed, since an answer may show a secret (a webhook secret, an API key).
public struct IdempotencyStore: Sendable {
    /// An answer as it is replayed: the status, the headers that say what the body is, where
    /// the new resource is and which version of it the answer made, and the body.
    public struct Answer: Sendable, Equatable {
        public var status: Int
        public var contentType: String?
        public var location: String?
        public var entityTag: String?
        public var body: [UInt8]

        public init(status: Int, contentType: String?, location: String?, entityTag: String? = nil, body: [UInt8]) {
            self.status = status
            self.contentType = contentType
            self.location = location
            self.entityTag = entityTag
            self.body = body
        }
    }

    /// The request that first used a key, as far as a resend must match it.
    public struct Fingerprint: Sendable, Equatable {
        public var method: String
        public var path: String
        public var bodyHash: String

        public init(method: String, path: String, bodyHash: String) {
            self.method = method
            self.path = path
            self.bodyHash = bodyHash
        }
    }

    public enum Claim: Sendable, Equatable {
        /// The key is this request's: run it, then `complete` or `release` the key.
        case claimed
        /// The same request was answered before: answer this again.
        case replay(Answer)
        /// The same key is in use by a request still running.
        case inProgress
        /// The key was used for another request (method, path or body).
        case mismatch
    }

    /// How long an answer is kept (and a key stays taken).
    public static let retention: Duration = .seconds(86_400)
    /// A claim without an answer after this long was abandoned (its process died) and may be taken.
    public static let abandonedAfter: Duration = .seconds(120)

    let database: Database
    let logger: Logger
    let sealer: SecretSealer

    public init(database: Database, logger: Logger, sealer: SecretSealer) {
        self.database = database
        self.logger = logger
        self.sealer = sealer
    }

    public func claim(scope: String, key: String, fingerprint: Fingerprint) async throws -> Claim {
        let retentionSeconds = Double(Self.retention.components.seconds)
        let abandonedSeconds = Double(Self.abandonedAfter.components.seconds)
        // A row deleted by the purge between the two statements is tried again.
        for _ in 0..<3 {
            // Inserting first serializes two identical requests: only one gets the row.
            // An expired answer or an abandoned claim is taken over as if it were not there.
            let inserted = try await database.client.query(
                """
                INSERT INTO idempotency_keys (scope, key, method, path, body_hash)
                VALUES (\(scope), \(key), \(fingerprint.method), \(fingerprint.path), \(fingerprint.bodyHash))
                ON CONFLICT (scope, key) DO UPDATE
                SET method = EXCLUDED.method, path = EXCLUDED.path, body_hash = EXCLUDED.body_hash, created_at = now(),
                    status = NULL, content_type = NULL, location = NULL, etag = NULL, body = NULL
                WHERE idempotency_keys.created_at < now() - make_interval(secs => \(retentionSeconds))
                   OR (idempotency_keys.status IS NULL
                       AND idempotency_keys.created_at < now() - make_interval(secs => \(abandonedSeconds)))
                RETURNING 1
                """, logger: logger)
            for try await _ in inserted { return .claimed }
            let rows = try await database.client.query(
                """
                SELECT method, path, body_hash, status, content_type, location, etag, body FROM idempotency_keys
                WHERE scope = \(scope) AND key = \(key)
                """, logger: logger)
            for try await (method, path, bodyHash, status, contentType, location, entityTag, body) in rows.decode(
                (String, String, String, Int?, String?, String?, String?, String?).self)
            {
                guard Fingerprint(method: method, path: path, bodyHash: bodyHash) == fingerprint else { return .mismatch }
                guard let status else { return .inProgress }
                let opened = try body.map { try sealer.open($0) } ?? ""
                return .replay(
                    Answer(
                        status: status, contentType: contentType, location: location, entityTag: entityTag,
                        body: Array(opened.utf8)))
            }
        }
        return .inProgress
    }

    /// Stores the answer of a claimed key (its body is text: the API answers JSON).
    public func complete(scope: String, key: String, answer: Answer) async throws {
        try await database.client.perform(
            """
            UPDATE idempotency_keys
            SET status = \(answer.status), content_type = \(answer.contentType), location = \(answer.location),
                etag = \(answer.entityTag), body = \(sealer.seal(String(decoding: answer.body, as: UTF8.self)))
            WHERE scope = \(scope) AND key = \(key) AND status IS NULL
            """, logger: logger)
    }

    /// Gives a claimed key up (the request failed on the server's side), so that a resend runs again.
    public func release(scope: String, key: String) async throws {
        try await database.client.perform(
            "DELETE FROM idempotency_keys WHERE scope = \(scope) AND key = \(key) AND status IS NULL", logger: logger)
    }

    /// Deletes the keys used before `cutoff`, a thousand at a time; returns how many.
    public func purge(before cutoff: Date) async throws -> Int {
        var deleted = 0
        while true {
            let rows = try await database.client.query(
                """
                DELETE FROM idempotency_keys WHERE ctid IN (
                    SELECT ctid FROM idempotency_keys WHERE created_at < \(cutoff) LIMIT 1000 FOR UPDATE SKIP LOCKED)
                RETURNING 1
                """, logger: logger)
            var count = 0
            for try await _ in rows { count += 1 }
            deleted += count
            if count < 1000 { return deleted }
        }
    }
}
