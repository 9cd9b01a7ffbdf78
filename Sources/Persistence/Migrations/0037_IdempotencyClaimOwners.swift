extension Migration {
    /// What a kept request is told apart by, and who holds a claim on its key.
    ///
    /// `if_match`: the request's `If-Match`, part of the request a key stands for, as its body
    /// is: the same key with another one is another request. Null without one (and for rows
    /// made before it was kept, whose requests are not told apart by it).
    ///
    /// `claim_token`: set anew at every claim, so that a request given up for dead, whose key
    /// another took over, answers or releases only a claim that is still its own.
    ///
    /// `renewed_at`: when the request holding the claim last said it still runs; a claim is
    /// taken over only after a silence, never by the time since it began (null: `created_at`).
    static let idempotencyClaimOwners = Migration(
        version: 37, name: "owners and renewals of idempotency claims",
        sql: """
            ALTER TABLE idempotency_keys ADD COLUMN if_match text;
            ALTER TABLE idempotency_keys ADD COLUMN claim_token uuid;
            ALTER TABLE idempotency_keys ADD COLUMN renewed_at timestamptz;
            """)
}
