import ArgumentParser
import CommandSupport
import Foundation
import Ingest
import Kafka
import Persistence
import Shared

/// Runs `body` with the device views and decision records of the configured database.
func withDeviceInsight<Result: Sendable>(
    project: String, of command: any ParsableCommand.Type, _ body: @Sendable (DeviceInsight) async throws -> Result
) async throws -> Result {
    try await withDatabase { database, logger in
        try await requireProject(project, of: command, database: database, logger: logger)
        return try await body(
            DeviceInsight(
                records: DeviceRecords(database: database, logger: logger), zones: ZoneStore(database: database, logger: logger)))
    }
}

/// Prints a value as the API answers it (RFC 3339 times), indented for reading.
func printWireJSON(_ value: some Encodable) throws {
    let encoder = WireJSON.encoder()
    encoder.outputFormatting.insert(.prettyPrinted)
    print(String(decoding: try encoder.encode(value), as: UTF8.self))
}

struct DevicesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "devices", abstract: "Why a device did or did not check in.",
        discussion: "Its state, and the decision records of its recent fixes.",
        subcommands: [Show.self, Decisions.self, Erase.self])

    struct Erase: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "erase",
            abstract: "Erase what is kept about a device.",
            discussion: """
                Its state, decision records, logged events and delivery payloads. Undelivered deliveries \
                are cancelled, and fixes accepted before the erasure that are still on their way are \
                dropped when they are evaluated. The device starts afresh with what it reports after.
                """)
        @Option(help: "The project id.") var project: String
        @Argument(help: "The device id.") var device: String

        func run() async throws {
            let erasure = try await devicesBackend(project: project, of: Self.self).erase(device: device)
            print(
                "erased device \(device): \(erasure.states) state, \(erasure.decisionRecords) decision records, \(erasure.loggedEvents) logged events, \(erasure.unpublishedEvents) unpublished events, \(erasure.deliveriesErased) delivery payloads (\(erasure.deliveriesCancelled) undelivered, cancelled); fixes still on their way are dropped"
            )
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "show",
            abstract: "What a device is now.",
            discussion: """
                Its last fix, open check-ins, the zones it is inside without a check-in and why, \
                minimum retrigger times, and when its check-ins time out if it stays silent.
                """)
        @Option(help: "The project id.") var project: String
        @Argument(help: "The device id.") var device: String
        @Flag(help: "Print the JSON the API answers.") var json = false

        func run() async throws {
            let view = try await devicesBackend(project: project, of: Self.self).view(device: device)
            if json { return try printWireJSON(view) }
            print(DeviceText.describe(view))
        }
    }

    struct Decisions: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "decisions", abstract: "A device's recent decision records, newest first.")
        @Option(help: "The project id.") var project: String
        @Argument(help: "The device id.") var device: String
        @Option(parsing: .unconditional, help: "How many fixes (1 to 1000).") var limit: Int = 20
        @Option(parsing: .unconditional, help: "Start after this cursor (printed at the end of a page).") var cursor: Int64?
        @Flag(help: "Print the JSON the API answers.") var json = false

        func validate() throws {
            guard (1...1000).contains(limit) else { throw CommandFailure("--limit must be from 1 to 1000", helpOf: Self.self) }
        }

        func run() async throws {
            let page = try await devicesBackend(project: project, of: Self.self).decisions(device: device, cursor: cursor, limit: limit)
            if json {
                return try printWireJSON(page)
            }
            if page.items.isEmpty {
                print("no decision records for device \(device) in project \(project)")
                return
            }
            print(DeviceText.table(page.items))
            if let next = page.nextCursor { print("more: --cursor \(next)") }
        }
    }
}

/// Device views and decision records as text for a terminal.
enum DeviceText {
    static func describe(_ view: DeviceView) -> String {
        var lines = ["device \(view.deviceId) of project \(view.projectId)"]
        if let fix = view.lastFix {
            lines.append(
                "  last fix      \(RFC3339.format(fix.timestamp))  " + String(format: "%.6f, %.6f", fix.lat, fix.lon)
                    + (fix.accuracy.map { "  ±\(number($0)) m" } ?? ""))
        }
        lines.append("  sequence      \(view.sequence)")
        for open in view.openCheckIns {
            lines.append(
                "  checked in    \(open.zoneId)\(open.fenceId.map { " (fence \($0))" } ?? "")\(open.beaconId.map { " (beacon \($0))" } ?? "") since \(RFC3339.format(open.since)), check-in \(open.checkInId)"
            )
        }
        for inside in view.insideWithoutCheckIn {
            lines.append("  inside        \(inside.zoneId) without a check-in: \(inside.reason?.rawValue ?? "no reason kept")")
        }
        for mrt in view.minimumRetriggerTimes {
            lines.append("  retrigger     \(mrt.zoneId) not before \(RFC3339.format(mrt.until))")
        }
        if let stale = view.staleCheckOutAt { lines.append("  times out at  \(RFC3339.format(stale)) if silent") }
        return lines.joined(separator: "\n")
    }

    /// One line per fix, then one per entry beneath it.
    static func table(_ records: [DecisionRecord]) -> String {
        var lines = [pad("FIX TIME", 26) + pad("FIX ID", 24) + pad("LAT, LON", 26) + "OUTCOME"]
        for record in records {
            let position = String(format: "%.6f, %.6f", record.location.lat, record.location.lon)
            lines.append(
                pad(RFC3339.format(record.timestamp), 26) + pad(record.fixId ?? "-", 24) + pad(position, 26) + record.summary)
            for entry in record.entries {
                var text = "    \(entry.outcome.rawValue)"
                if let zone = entry.zoneId { text += " \(zone)" }
                if let fence = entry.fenceId { text += " (fence \(fence))" }
                if let reason = entry.reason { text += ": \(reason.rawValue)" }
                let detail = details(entry.detail)
                if !detail.isEmpty { text += "  [\(detail)]" }
                lines.append(text)
            }
        }
        return lines.joined(separator: "\n")
    }

    static func details(_ detail: DecisionDetail) -> String {
        guard let data = try? WireJSON.encoder().encode(detail),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { return "" }
        return object.keys.sorted().map { key in "\(key)=\(object[key].map { "\($0)" } ?? "")" }.joined(separator: " ")
    }

    static func number(_ value: Double) -> String {
        String(format: "%.6g", value)
    }

    static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text + " " : text + String(repeating: " ", count: width - text.count)
    }
}

struct EventsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "events", abstract: "The event log and where each delivery stands.",
        subcommands: [List.self])

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list", abstract: "A project's events, newest first.",
            discussion: "Each event with the state of its delivery to each endpoint.")
        @Option(help: "The project id.") var project: String
        @Option(help: "Only this device's.") var device: String?
        @Option(help: "Only this zone's.") var zone: String?
        @Option(help: "checkin or checkout.") var type: String?
        @Option(help: "Happened at or after (RFC 3339).") var from: String?
        @Option(help: "Happened before (RFC 3339).") var until: String?
        @Option(parsing: .unconditional, help: "How many (1 to 1000).") var limit: Int = 50
        @Option(parsing: .unconditional, help: "Start after this cursor (printed at the end of a page).") var cursor: Int64?
        @Flag(help: "Print the JSON the API answers.") var json = false

        func validate() throws {
            guard (1...1000).contains(limit) else { throw CommandFailure("--limit must be from 1 to 1000", helpOf: Self.self) }
            if let type, EventType(rawValue: type) == nil { throw CommandFailure("--type must be checkin or checkout", helpOf: Self.self) }
            for (name, value) in [("--from", from), ("--until", until)] {
                if let value, RFC3339.parse(value) == nil {
                    throw CommandFailure("\(name) '\(value)' is not an RFC 3339 time (e.g. 2026-11-22T10:00:00Z)", helpOf: Self.self)
                }
            }
        }

        func run() async throws {
            let filter = EventFilter(
                deviceId: device, zoneId: zone, type: type.flatMap(EventType.init(rawValue:)), from: from.flatMap(RFC3339.parse),
                until: until.flatMap(RFC3339.parse))
            let page = try await devicesBackend(project: project, of: Self.self).events(filter, cursor: cursor, limit: limit)
            if json {
                return try printWireJSON(page)
            }
            if page.items.isEmpty {
                print("no events in project \(project) match")
                return
            }
            for logged in page.items {
                let event = logged.event
                let time = event.checkOutTime ?? event.location.timestamp
                print(
                    DeviceText.pad(RFC3339.format(time), 26) + DeviceText.pad(event.type.rawValue, 9)
                        + DeviceText.pad(event.deviceId, 24) + DeviceText.pad(event.zone.id, 20) + "sequence \(event.sequence)"
                        + (event.reason.map { "  \($0.rawValue)" } ?? ""))
                for delivery in logged.deliveries {
                    print(
                        "    \(delivery.endpointId): \(delivery.status), \(delivery.attempts) attempt(s)"
                            + (delivery.lastStatusCode.map { ", HTTP \($0)" } ?? "") + (delivery.lastError.map { ", \($0)" } ?? ""))
                }
            }
            if let next = page.nextCursor { print("more: --cursor \(next)") }
        }
    }
}
