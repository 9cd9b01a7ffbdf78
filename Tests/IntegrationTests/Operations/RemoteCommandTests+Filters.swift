import Foundation
import Persistence
import Shared
import Testing

extension RemoteCommandTests {
    /// `deliveries list --endpoint/--device` prints the same through the API as on the
    /// database, that endpoint's or device's alone; and `zones import --message` keeps the
    /// message with the version, which `zones versions` shows beside its author both ways.
    @Test func filteredDeliveriesAndVersionMessagesPrintTheSameBothWays() async throws {
        try await withRemoteIngest { harness, url in
            let (remote, direct) = (Self.remote(url, key: harness.managementKey), Self.direct(harness))
            let project = ["--project", harness.projectId]
            let (phone, tablet) = ("phone-\(harness.suffix)", "tablet-\(harness.suffix)")
            let (endpoints, keyId) = try await Database.withTemporaryClient(
                configuration: try harness.databaseConfiguration(), logger: harness.logger
            ) { database in
                let webhooks = WebhookStore(database: database, logger: harness.logger, sealer: harness.sealer)
                var endpoints: [String] = []
                for name in ["first", "second"] {
                    let endpoint = try await webhooks.addEndpoint(
                        projectId: harness.projectId, url: "http://127.0.0.1:9/\(name)-\(harness.suffix)",
                        secrets: [WebhookSecret.generate()])
                    _ = try await webhooks.disableEndpoint(id: endpoint.id, projectId: harness.projectId, reason: "test")
                    endpoints.append(endpoint.id)
                }
                for (endpoint, device) in [(endpoints[0], phone), (endpoints[0], tablet), (endpoints[1], phone)] {
                    _ = try await webhooks.enqueue([
                        NewDelivery(
                            endpointId: endpoint, projectId: harness.projectId, eventId: "\(endpoint)-\(device)",
                            eventType: "checkin", deviceId: device, eventTime: Date(), sequence: 1, payload: "{}")
                    ])
                }
                let key = try await ProjectStore(database: database, logger: harness.logger).match(
                    forKey: harness.managementKey, kind: .management)
                return (endpoints, try #require(key).keyId)
            }

            /// The (endpoint, device) of each line of a printed list, below its header.
            func listed(_ printed: String) -> [String] {
                printed.split(separator: "\n").dropFirst().map { line in
                    let columns = line.split(separator: " ", omittingEmptySubsequences: true)
                    return "\(columns[5]) \(columns[3])"
                }
            }
            for (filter, expected) in [
                (["--endpoint", endpoints[0]], ["\(endpoints[0]) \(tablet)", "\(endpoints[0]) \(phone)"]),
                (["--device", phone], ["\(endpoints[1]) \(phone)", "\(endpoints[0]) \(phone)"]),
                (["--device", phone, "--endpoint", endpoints[1], "--status", "pending"], ["\(endpoints[1]) \(phone)"]),
                (["--endpoint", "we_none"], []),
            ] {
                let read = ["deliveries", "list"] + filter + project
                let throughAPI = try await Self.succeed(read, remote)
                #expect(throughAPI == (try await Self.succeed(read, direct)), "\(read)")
                #expect(listed(throughAPI) == expected, "\(read): \(throughAPI)")
            }

            let message = "terrace opens, its fence grows"
            _ = try await Self.succeed(["zones", "import", "--message", message] + project + [Self.exampleZones], remote)
            _ = try await Self.succeed(["zones", "import", "--message", "from the database"] + project + [Self.exampleZones], direct)
            let versions = try await Self.succeed(["zones", "versions"] + project, remote)
            #expect(versions == (try await Self.succeed(["zones", "versions"] + project, direct)))
            // Columns are two spaces apart or more; a message has single spaces only.
            let rows = versions.split(separator: "\n").map { line in
                line.components(separatedBy: "  ").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            }
            #expect(rows.first?.suffix(2) == ["AUTHOR", "MESSAGE"], "\(versions)")
            let authorsAndMessages = rows.dropFirst().map { Array($0.dropFirst(3)) }
            #expect(authorsAndMessages == [["-", "from the database"], [keyId, message], ["-"]], "\(versions)")

            let refused = try await CommandOutcome.run(
                ["zones", "import", "--message", String(repeating: "x", count: 201)] + project + [Self.exampleZones],
                environment: remote)
            #expect(refused.exitCode != 0 && refused.standardError.contains("--message is longer than 200 characters"))
        }
    }
}
