import Foundation

/// One numbered, immutable schema change. Once a migration has landed it is never
/// edited: a change to the schema is a new migration.
public struct Migration: Sendable {
    public var version: Int
    public var name: String
    public var sql: String
}

extension Migration {
    /// Every migration, in order.
    public static let all: [Migration] = [
        initialSchema, partitionOwnership, orderedDeliveries, webhookEndpointSecurity, undeliveredIndex, dueDeliveriesOrder,
        staleCheckOutByStream, projectZoneVersions, eventOutbox, binaryDeviceState, pipelineStageTimes,
        consumerGroupIncarnations, decisionRecords, eventLog, deviceErasure, decisionRecordRuns, zoneDocumentVersions,
        apiKeyLifecycle, idempotencyKeys, deliveryReplays, deliveryStatusStatistics, staleCheckOutMinute,
        deliveryPageRoom, notifierLeases, eventPayloads, finishingAttempt, scheduledDueOrder, idempotentEntityTags,
        deadLetterRedrives, deadLetterRedriveCount, projectDeliveriesInIdOrder, projectFailedDeliveries, exactErasure,
        dueOrderByEndpoint, idempotencyClaimOwners,
    ]
}

extension Migration {
    /// The extended query protocol runs one statement at a time, so the script is
    /// split at every line that ends a statement (migrations keep `;` out of literals).
    var statements: [String] {
        var result: [String] = []
        var current = ""
        for line in sql.split(separator: "\n", omittingEmptySubsequences: false) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix("--") { continue }
            current += line + "\n"
            if trimmed.hasSuffix(";") {
                result.append(current)
                current = ""
            }
        }
        if !current.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty { result.append(current) }
        return result
    }
}
