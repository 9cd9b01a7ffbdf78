/// Whether migrations keep the schema usable by the release before them, as the compatibility
/// policy asks (docs/releases.md): during a rolling upgrade the new release migrates first and
/// the previous release's processes go on running against the migrated schema.
///
/// A migration may add tables, columns (nullable or with a default), indexes and rows, and fill
/// what it added. What drops, renames or changes in place something an older release reads or
/// writes is refused, unless the migration declares it (`Migration.contracts`) with the newest
/// release that reads it, older than the release in `Release.swift` (the one the tree's next
/// release runs beside). A statement the check does not recognise is refused too, and so is one
/// that cannot run inside the transaction each migration is applied in.
package struct MigrationPolicy: Sendable {
    /// The migrations that landed before the policy was checked, whose contracting statements
    /// are accepted as they are: all shipped by 0.9.0, the first versioned release, so none
    /// ever ran beside a predecessor under the policy. A landed migration is never edited, so
    /// the reasons stay here. No migration after `grandfatheredThrough` can join them.
    package static let grandfathered: [Int: String] = [
        4: "drops webhook_endpoints.secrets, moved into webhook_secrets",
        7: "drops deliveries_due and deliveries_undelivered for their replacements in claim order",
        9: "drops device_states_stale_at for the index by partition",
        12: "lets device_states.state be null once states are written to state_binary",
        17: "widens deliveries_status_check with 'cancelled' by dropping and adding it again",
        18: "renames decision_records away, copies it into runs and drops it",
        20: "backfills api_keys.id for every key, then makes it required and unique",
        23: "retypes deliveries.status to its own type to drop its statistics; drops deliveries_undelivered_age",
        24: "drops device_states_partition_stale_at for the index by minute",
        27: "drops deliveries.payload, moved into event_payloads",
        29: "replaces deliveries_due_order with the index of scheduled deliveries, under the same name",
        32: "drops dead_letter_redrives.redriven, which nothing read",
        33: "replaces deliveries_project with the index in id order, under the same name",
        36: "replaces deliveries_due_order with the index by endpoint, under the same name",
    ]
    package static let grandfatheredThrough = 37

    /// A release line, `MAJOR.MINOR`: what runs side by side is told apart by these two.
    package struct ReleaseLine: Comparable, Sendable, CustomStringConvertible {
        package var major: Int
        package var minor: Int

        /// From `MAJOR.MINOR` or `MAJOR.MINOR.PATCH`.
        package init?(_ text: String) {
            let parts = text.split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count == 2 || parts.count == 3, let major = Int(parts[0]), let minor = Int(parts[1]),
                parts.count == 2 || Int(parts[2]) != nil
            else { return nil }
            self.major = major
            self.minor = minor
        }

        package static func < (lhs: Self, rhs: Self) -> Bool { (lhs.major, lhs.minor) < (rhs.major, rhs.minor) }
        package var description: String { "\(major).\(minor)" }
    }

    /// One thing the policy refuses, naming the migration and the statement.
    package struct Violation: Sendable, CustomStringConvertible {
        package var version: Int
        package var name: String
        /// The statement, on one line (empty when the violation is about the migration as a whole).
        package var statement: String
        package var reason: String

        package var description: String {
            "migration \(version) (\(name)) \(reason)" + (statement.isEmpty ? "" : ": \(statement)")
        }
    }

    struct InvalidRelease: Error, CustomStringConvertible {
        var text: String
        var description: String { "\(text) is not a release version (MAJOR.MINOR.PATCH)" }
    }

    /// The release that the tree's next release runs beside.
    package let release: ReleaseLine
    let grandfathered: [Int: String]

    /// - Parameter release: the version in `Release.swift`.
    package init(release: String, grandfathered: [Int: String] = Self.grandfathered) throws {
        guard let line = ReleaseLine(release) else { throw InvalidRelease(text: release) }
        self.release = line
        self.grandfathered = grandfathered
    }

    /// Everything the policy refuses in `migrations`, in their order; empty when they keep it.
    package func violations(in migrations: [Migration]) -> [Violation] {
        var violations: [Violation] = []
        var previous: Int?
        for migration in migrations {
            if let previous, migration.version <= previous {
                violations.append(
                    Violation(
                        version: migration.version, name: migration.name, statement: "",
                        reason: "comes after migration \(previous): versions must grow, each used once"))
            }
            previous = migration.version
            violations += self.violations(in: migration)
        }
        for version in grandfathered.keys.sorted() where version > Self.grandfatheredThrough {
            violations.append(
                Violation(
                    version: version, name: migrations.first { $0.version == version }?.name ?? "unknown", statement: "",
                    reason:
                        "is grandfathered, but only migrations up to \(Self.grandfatheredThrough) can be: "
                        + "declare its contractions instead"))
        }
        return violations
    }

    func violations(in migration: Migration) -> [Violation] {
        func violation(_ statement: String, _ reason: String) -> Violation {
            Violation(version: migration.version, name: migration.name, statement: Self.oneLine(statement), reason: reason)
        }
        var violations: [Violation] = []
        var created = MigrationStatement.Created()
        var refused: [(statement: String, finding: MigrationStatement.Finding)] = []
        for statement in migration.statements {
            for finding in MigrationStatement(statement).findings(created: &created) {
                refused.append((statement, finding))
            }
        }
        if migration.version <= Self.grandfatheredThrough, grandfathered[migration.version] != nil {
            if refused.isEmpty {
                violations.append(
                    violation("", "is grandfathered but makes no change the policy refuses: take it out of the list"))
            }
            return violations
        }
        let declared = Dictionary(
            migration.contracts.map { ($0.subject.lowercased(), $0) }, uniquingKeysWith: { first, _ in first })
        var used: Set<String> = []
        for (statement, finding) in refused {
            guard finding.isContractible, let contraction = declared[finding.subject.lowercased()] else {
                let remedy =
                    finding.isContractible
                    ? "; once no release that reads it runs, declare Contraction(\"\(finding.subject)\", lastReadBy:)" : ""
                violations.append(violation(statement, "refused: it " + finding.explanation + remedy))
                continue
            }
            used.insert(contraction.subject.lowercased())
            guard let line = ReleaseLine(contraction.lastReadBy), line < release else {
                violations.append(
                    violation(
                        statement,
                        "refused: it contracts \(finding.subject), last read by \(contraction.lastReadBy), which is not a "
                            + "release older than \(release), the one that runs beside this migration's release"))
                continue
            }
        }
        for contraction in migration.contracts where !used.contains(contraction.subject.lowercased()) {
            violations.append(
                violation("", "declares a contraction of \(contraction.subject) that none of its statements makes"))
        }
        return violations
    }

    static func oneLine(_ statement: String) -> String {
        let text = statement.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        return text.count > 200 ? String(text.prefix(200)) + "…" : text
    }
}
