import Foundation

/// One numbered, immutable schema change. Once a migration has landed it is never
/// edited: a change to the schema is a new migration.
package struct Migration: Sendable {
    package var version: Int
    package var name: String
    package var sql: String
    /// What the migration removes or changes in place that an older release read: each one
    /// named, with the newest release that read it (`MigrationPolicy`). Empty for a migration
    /// that only adds, which is what a migration normally does.
    package var contracts: [Contraction]

    package init(version: Int, name: String, sql: String, contracts: [Contraction] = []) {
        self.version = version
        self.name = name
        self.sql = sql
        self.contracts = contracts
    }
}

extension Migration {
    /// A table, column, index or constraint that a migration drops, renames or changes in
    /// place, declared because no release that still reads it runs beside this one.
    package struct Contraction: Sendable, Hashable {
        /// What goes, as `MigrationPolicy` names it: a table or index by its name
        /// (`device_erasures`), a column or constraint after its table's
        /// (`deliveries.payload`, `deliveries.deliveries_status_check`).
        package var subject: String
        /// The newest release, `MAJOR.MINOR`, that reads it: older than the release the
        /// migration's release runs beside during an upgrade.
        package var lastReadBy: String

        package init(_ subject: String, lastReadBy: String) {
            self.subject = subject
            self.lastReadBy = lastReadBy
        }
    }
}

extension Migration {
    /// Every migration, in order.
    package static let all: [Migration] = [
        initialSchema, partitionOwnership, orderedDeliveries, webhookEndpointSecurity, undeliveredIndex, dueDeliveriesOrder,
        staleCheckOutByStream, projectZoneVersions, eventOutbox, binaryDeviceState, pipelineStageTimes,
        consumerGroupIncarnations, decisionRecords, eventLog, deviceErasure, decisionRecordRuns, zoneDocumentVersions,
        apiKeyLifecycle, idempotencyKeys, deliveryReplays, deliveryStatusStatistics, staleCheckOutMinute,
        deliveryPageRoom, notifierLeases, eventPayloads, finishingAttempt, scheduledDueOrder, idempotentEntityTags,
        deadLetterRedrives, deadLetterRedriveCount, projectDeliveriesInIdOrder, projectFailedDeliveries, exactErasure,
        dueOrderByEndpoint, idempotencyClaimOwners, keyNames, deliveryStates, deliveryListFilters, zoneVersionAuthors,
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
