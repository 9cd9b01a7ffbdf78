import Foundation
import Shared
import Testing

extension ExplanationSuites {
    /// The console page (`/console`) in a real browser: headless Chromium, driven by the test
    /// through the page's fragment (key, device, fix to select), read back as its DOM and a screenshot.
    @Suite(.serialized) struct ConsolePageTests {
        /// Where the screenshot goes: `.build/test-output/console/` of the package.
        static let outputDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(".build/test-output/console")

        @Test func zonesTrailAndTheReasonOfABlockedFixAreShown() async throws {
            let start = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 - 600).rounded(.down))
            let harness = {
                var harness = PipelineHarness()
                harness.zones = ExplanationTrips.zones(inactiveHour: 0)
                return harness
            }()
            let trip = try #require(ExplanationTrips.cases.first { $0.name == "mrt" })
            let deviceId = "console-\(harness.suffix)"
            let fixes = ExplanationTrips.fixes(of: trip, projectId: harness.projectId, deviceId: deviceId, start: start)
            try await harness.run { ingestPort, received in
                let base = "http://127.0.0.1:\(ingestPort)"
                let body = try fixesBody(fixes)
                #expect(try await post(body, to: "\(base)/v1/fixes", key: harness.deviceKey).status == 202)
                _ = try await waitForRecords(count: fixes.count, of: deviceId, base: "\(base)/v1", key: harness.managementKey)
                try await received.wait(timeout: .seconds(60)) { payloads in
                    payloads.filter { $0.data.deviceId == deviceId }.count == 2
                }

                let page = try await post(Data(), to: "\(base)/console", key: nil, method: .GET)
                #expect(page.status == 200 && page.contentType == "text/html; charset=utf-8")
                #expect(!page.body.contains("src=\"http") && !page.body.contains("href=\"http"), "the page loads nothing from elsewhere")

                // The blocked fix: the last, back in the zone within its MRT.
                let blocked = fixes[3].fixId!
                let url = "\(base)/console#key=\(harness.managementKey)&device=\(deviceId)&select=\(blocked)"
                try FileManager.default.createDirectory(at: Self.outputDirectory, withIntermediateDirectories: true)
                let screenshot = Self.outputDirectory.appendingPathComponent("console.png")
                try? FileManager.default.removeItem(at: screenshot)
                let dom = try await Chromium.run(["--dump-dom", url])
                _ = try await Chromium.run(["--screenshot=\(screenshot.path)", "--window-size=1280,800", url])

                #expect(dom.contains("data-state=\"loaded\""), "the page did not finish loading: \(dom.suffix(400))")
                #expect(dom.contains("data-zone-id=\"z-mrt\""), "the zone is not drawn")
                #expect(dom.components(separatedBy: "class=\"fix fix-").count - 1 == fixes.count, "not every fix is on the trail")
                for outcome in ["checked-in", "checked-out", "entered"] {
                    #expect(dom.contains("data-outcome=\"\(outcome)\""), "no fix marked \(outcome)")
                }
                #expect(dom.contains("fix fix-entered selected"), "the blocked fix is not the selected one")
                #expect(dom.contains("minimum-retrigger-time"), "the selected fix's reason is not shown")
                #expect(dom.components(separatedBy: "data-event-id=").count - 1 == 2, "the event log does not list both events")
                let png = try Data(contentsOf: screenshot)
                #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47]) && png.count > 10_000, "no screenshot at \(screenshot.path)")
            }
        }
    }
}

/// Debian's Chromium, headless, run to completion on one URL.
enum Chromium {
    static func run(_ arguments: [String]) async throws -> String {
        guard let binary = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].first(where: FileManager.default.isExecutableFile)
        else { throw TestFailure("chromium is not installed (scripts/setup.sh installs it)") }
        let profile = FileManager.default.temporaryDirectory.appendingPathComponent("chromium-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: profile) }
        // Virtual time waits for the page's requests, so the DOM and the picture are of the loaded page.
        let outcome = try await CommandOutcome.run(
            executable: URL(fileURLWithPath: binary),
            arguments: [
                "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars",
                "--user-data-dir=\(profile.path)", "--virtual-time-budget=20000",
            ] + arguments, timeout: .seconds(90))
        guard outcome.exitCode == 0 else { throw TestFailure("chromium exited \(outcome.exitCode)") }
        return outcome.standardOutput
    }
}
