import Foundation
import Logging
import PostgresNIO
import Shared

/// The answers to requests sent with an `Idempotency-Key`, per client scope (the operator,
/// or a project). The first request claims its key with a row that has no answer yet; the
/// answer is stored when it is known; a request with the same key gets that answer again.
/// Bodies are stored sealed, since an answer may show a secret (a webhook secret, an API key).
///
/// A claim belongs to the request that made it (its token) and is renewed while that request
/// runs (`holding`): it is taken over only after `abandonedAfter` without a renewal, when its
/// process is gone, however long the request itself has been running. A request whose claim
/// was taken over all the same (its renewals failed) stores and releases nothing of the new one.
package struct IdempotencyStore: Sendable {
    /// An answer as it is replayed: the status, the headers that say what the body is, where
    /// the new resource is and which version of it the answer made, and the body.
    package struct Answer: Sendable, Equatable {
        package var status: Int
        package var contentType: String?
        package var location: String?
        package var entityTag: String?
        package var body: [UInt8]

        package init(status: Int, contentType: String?, location: String?, entityTag: String? = nil, body: [UInt8]) {
            self.status = status
            self.contentType = contentType
            self.location = location
            self.entityTag = entityTag
            self.body = body
        }
    }

    /// The request that first used a key, as far as a resend must match it.
    package struct Fingerprint: Sendable, Equatable {
        package var method: String
        package var path: String
        /// The version the request was guarded by: with another one it is another request.
        package var ifMatch: String?
        package var bodyHash: String

        package init(method: String, path: String, ifMatch: String? = nil, bodyHash: String) {
            self.method = method
            self.path = path
            self.ifMatch = ifMatch
            self.bodyHash = bodyHash
        }
    }

    /// A key as one request holds it: what it renews, answers and releases, as long as the
    /// claim is still its own.
    package struct ClaimedKey: Sendable, Equatable {
        package var scope: String
        package var key: String
        /// New at every claim, so that a claim taken over is told from the one before.
        package var token: UUID
    }

    package enum Claim: Sendable, Equatable {
        /// The key is this request's: run it (`holding` the claim), then `complete` or `release` it.
        case claimed(ClaimedKey)
        /// The same request was answered before: answer this again.
        case replay(Answer)
        /// The same key is in use by a request still running.
        case inProgress
        /// The key was used for another request (method, path, `If-Match` or body).
        case mismatch
    }

    /// How long an answer is kept (and a key stays taken).
    package static let retention: Duration = .seconds(86_400)
    /// A claim not renewed for this long was abandoned (its process died) and may be taken over.
    package static let abandonedAfter: Duration = .seconds(120)
    /// How often a running request renews its claim: a quarter of `abandonedAfter`, so that
    /// a claim is taken over only after several renewals in a row were missed, never while a
    /// slow request (a large replay, a restore waiting for a lock) still runs.
    package static let renewalInterval: Duration = .seconds(30)

    let database: Database
    let logger: Logger
    let sealer: SecretSealer

    package init(database: Database, logger: Logger, sealer: SecretSealer) {
        self.database = database
        self.logger = logger
        self.sealer = sealer
    }

    package func claim(scope: String, key: String, fingerprint: Fingerprint) async throws -> Claim {
        let retentionSeconds = Double(Self.retention.components.seconds)
        let abandonedSeconds = Double(Self.abandonedAfter.components.seconds)
        // A row deleted by the purge between the two statements is tried again.
        for _ in 0..<3 {
            let claimed = ClaimedKey(scope: scope, key: key, token: UUID())
            // Inserting first serializes two identical requests: only one gets the row.
            // An expired answer or an abandoned claim is taken over as if it were not there;
            // a claim still renewed is not, however long ago its request began.
            let inserted = try await database.client.query(
                """
                INSERT INTO idempotency_keys (scope, key, method, path, if_match, body_hash, claim_token, renewed_at)
                VALUES (\(scope), \(key), \(fingerprint.method), \(fingerprint.path), \(fingerprint.ifMatch),
                        \(fingerprint.bodyHash), \(claimed.token), now())
                ON CONFLICT (scope, key) DO UPDATE
                SET method = EXCLUDED.method, path = EXCLUDED.path, if_match = EXCLUDED.if_match,
                    body_hash = EXCLUDED.body_hash, created_at = now(), claim_token = EXCLUDED.claim_token, renewed_at = now(),
                    status = NULL, content_type = NULL, location = NULL, etag = NULL, body = NULL
                WHERE (idempotency_keys.status IS NOT NULL
                       AND idempotency_keys.created_at < now() - make_interval(secs => \(retentionSeconds)))
                   OR (idempotency_keys.status IS NULL
                       AND coalesce(idempotency_keys.renewed_at, idempotency_keys.created_at)
                           < now() - make_interval(secs => \(abandonedSeconds)))
                RETURNING 1
                """, logger: logger)
            for try await _ in inserted { return .claimed(claimed) }
            let rows = try await database.client.query(
                """
                SELECT method, path, if_match, body_hash, status, content_type, location, etag, body FROM idempotency_keys
                WHERE scope = \(scope) AND key = \(key)
                """, logger: logger)
            for try await (method, path, ifMatch, bodyHash, status, contentType, location, entityTag, body) in rows.decode(
                (String, String, String?, String, Int?, String?, String?, String?, String?).self)
            {
                let first = Fingerprint(method: method, path: path, ifMatch: ifMatch, bodyHash: bodyHash)
                guard first == fingerprint else { return .mismatch }
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

    /// Runs `body`, the request that holds `claimed`, renewing the claim every `interval`
    /// until it returns, so that a resend is refused for as long as it runs.
    package func holding<Result>(
        _ claimed: ClaimedKey, renewingEvery interval: Duration = renewalInterval, _ body: () async throws -> Result
    ) async throws -> Result {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                while (try? await Task.sleep(for: interval)) != nil {
                    do {
                        if try await renew(claimed) { continue }
                        logger.warning(
                            "an idempotency claim was taken over while its request ran",
                            metadata: ["scope": "\(claimed.scope)"])
                        return
                    } catch {
                        // The next renewal may get through; until `abandonedAfter` the claim holds.
                        logger.warning(
                            "an idempotency claim could not be renewed", metadata: ["scope": "\(claimed.scope)", "error": "\(error)"])
                    }
                }
            }
            defer { group.cancelAll() }
            return try await body()
        }
    }

    /// Marks the claim as still running; false when it is no longer this request's (taken
    /// over, or answered).
    package func renew(_ claimed: ClaimedKey) async throws -> Bool {
        let rows = try await database.client.query(
            """
            UPDATE idempotency_keys SET renewed_at = now()
            WHERE scope = \(claimed.scope) AND key = \(claimed.key) AND claim_token = \(claimed.token) AND status IS NULL
            RETURNING 1
            """, logger: logger)
        for try await _ in rows { return true }
        return false
    }

    /// Stores the answer of a claimed key (its body is text: the API answers JSON), while the
    /// claim is still this request's.
    package func complete(_ claimed: ClaimedKey, answer: Answer) async throws {
        try await database.client.perform(
            """
            UPDATE idempotency_keys
            SET status = \(answer.status), content_type = \(answer.contentType), location = \(answer.location),
                etag = \(answer.entityTag), body = \(sealer.seal(String(decoding: answer.body, as: UTF8.self)))
            WHERE scope = \(claimed.scope) AND key = \(claimed.key) AND claim_token = \(claimed.token) AND status IS NULL
            """, logger: logger)
    }

    /// Gives a claimed key up (its answer is not kept), so that a resend runs again; a claim
    /// another request took over meanwhile is that one's and stays.
    package func release(_ claimed: ClaimedKey) async throws {
        try await database.client.perform(
            """
            DELETE FROM idempotency_keys
            WHERE scope = \(claimed.scope) AND key = \(claimed.key) AND claim_token = \(claimed.token) AND status IS NULL
            """, logger: logger)
    }

    /// Deletes the keys used before `cutoff`, but a claim its request still renews, a thousand
    /// at a time; returns how many.
    package func purge(before cutoff: Date) async throws -> Int {
        var deleted = 0
        while true {
            let rows = try await database.client.query(
                """
                DELETE FROM idempotency_keys WHERE ctid IN (
                    SELECT ctid FROM idempotency_keys
                    WHERE created_at < \(cutoff) AND (status IS NOT NULL OR coalesce(renewed_at, created_at) < \(cutoff))
                    LIMIT 1000 FOR UPDATE SKIP LOCKED)
                RETURNING 1
                """, logger: logger)
            var count = 0
            for try await _ in rows { count += 1 }
            deleted += count
            if count < 1000 { return deleted }
        }
    }
}
