import Foundation
import Testing

/// `checkin replay` refuses what `zones import` and the services refuse, in their words, and
/// as every other command refuses an input: `Error: …`, exit 1, nothing on stdout.
@Suite final class ReplayCommandTests {
    let directory: URL

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("checkin-replay-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: directory) }

    /// Writes `text` to a file of its own in the test's directory and returns its path.
    func write(_ text: String, named name: String) throws -> String {
        let file = directory.appendingPathComponent(name)
        try Data(text.utf8).write(to: file)
        return file.path
    }

    static func zones(member: String) -> String {
        #"{"zones": [{"id": "z", \#(member), "fences": [{"id": "f", "geometry": {"type": "Point", "coordinates": [0, 0]}, "radius": 100}]}]}"#
    }

    static let fix = #"{"projectId": "p", "deviceId": "d", "timestamp": "2026-06-01T10:00:00Z", "lat": 0, "lon": 0, "accuracy": 5}"#

    /// A misspelt member or an invalid fence is refused as `zones import` refuses it, with the
    /// same lines, before any fix is replayed; the first line names the option.
    @Test(arguments: [
        (#""minimumRetrigerTime": 60"#, "zones[z].minimumRetrigerTime: is not a member of a zones document"),
        (#""name": "Z", "checkOutEnabled": "yes""#, "zones[0].checkOutEnabled has the wrong type"),
    ])
    func aZonesFileIsRefusedAsZonesImportRefusesIt(member: String, problem: String) async throws {
        let zones = try write(Self.zones(member: member), named: "zones.json")
        let fixes = try write(Self.fix, named: "trip.jsonl")
        let replay = try await CommandOutcome.run(["replay", "--zones", zones, "--fixes", fixes])
        let imported = try await CommandOutcome.run(["zones", "import", "--project", "p", zones])
        #expect(replay.exitCode == 1, "\(replay.standardError)")
        #expect(replay.standardOutput.isEmpty)
        #expect(replay.standardError.hasPrefix("Error: --zones \(zones)"), "\(replay.standardError)")
        #expect(replay.standardError.contains(problem), "\(replay.standardError)")
        #expect(imported.standardError.contains(problem), "\(imported.standardError)")
        #expect(
            replay.standardError.replacingOccurrences(of: "--zones \(zones)", with: zones) == imported.standardError,
            "replay: \(replay.standardError)\nimport: \(imported.standardError)")
    }

    /// Every zone and fence that cannot be read is named, one line each, by both commands.
    @Test func everyZoneThatCannotBeReadIsNamedOnALineOfItsOwn() async throws {
        let zones = try write(
            #"{"zones": [{"id": "a", "enabled": "yes"}, {"id": "b", "fences": [{"id": "f", "geometry": {"type": "Point", "coordinates": [0, 0]}, "radius": "100"}]}]}"#,
            named: "zones.json")
        let fixes = try write(Self.fix, named: "trip.jsonl")
        for arguments in [["replay", "--zones", zones, "--fixes", fixes], ["zones", "import", "--project", "p", zones]] {
            let outcome = try await CommandOutcome.run(arguments)
            #expect(outcome.exitCode == 1, "\(outcome.standardError)")
            let lines = outcome.standardError.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            #expect(lines.contains { $0.hasPrefix("zones[0].enabled has the wrong type") }, "\(outcome.standardError)")
            #expect(lines.contains { $0.hasPrefix("zones[1].fences[0].radius has the wrong type") }, "\(outcome.standardError)")
        }
    }

    /// An invalid fence is a refused input like any other: `Error: …` and exit 1, not a bare
    /// list of problems and exit 2.
    @Test func anInvalidFenceIsAnErrorLikeEveryRefusedInput() async throws {
        let zones = try write(
            #"{"zones": [{"id": "z", "fences": [{"id": "f", "geometry": {"type": "Point", "coordinates": [0, 0]}, "radius": 0}]}]}"#,
            named: "zones.json")
        let fixes = try write(Self.fix, named: "trip.jsonl")
        let replay = try await CommandOutcome.run(["replay", "--zones", zones, "--fixes", fixes])
        let imported = try await CommandOutcome.run(["zones", "import", "--project", "p", zones])
        #expect(replay.exitCode == 1)
        #expect(replay.standardOutput.isEmpty)
        #expect(replay.standardError.hasPrefix("Error: --zones \(zones):\n  "), "\(replay.standardError)")
        #expect(replay.standardError.contains("radius"), "\(replay.standardError)")
        #expect(replay.standardError.replacingOccurrences(of: "--zones \(zones)", with: zones) == imported.standardError)
    }

    /// Every number is held to the range the services hold the matching `CHECKIN_*` setting
    /// to, written with `=` or with a space (a negative number is not taken for an option).
    @Test(arguments: [
        (["--max-accuracy=-5"], "--max-accuracy must be from 0 to 100000 metres"),
        (["--max-accuracy", "-5"], "--max-accuracy must be from 0 to 100000 metres"),
        (["--exit-buffer", "inf"], "--exit-buffer must be from 0 to 10000 metres"),
        (["--stale-after", "0"], "--stale-after must be from 1 to 31536000 seconds"),
        (["--max-crossing-gap", "nan"], "--max-crossing-gap must be from 1 to 86400 seconds"),
        (["--beacon-exit-after", "86401"], "--beacon-exit-after must be from 1 to 86400 seconds"),
        (["--restart-tolerance", "-0.5"], "--restart-tolerance must be from 0 to 10000 metres"),
        (["--max-clock-skew", "-100"], "--max-clock-skew must be from 0 to 86400 seconds"),
    ])
    func aNumberOutsideItsRangeIsRefusedNamingTheRange(option: [String], message: String) async throws {
        let zones = try write(Self.zones(member: #""name": "Z""#), named: "zones.json")
        let fixes = try write(Self.fix, named: "trip.jsonl")
        let replay = try await CommandOutcome.run(["replay", "--zones", zones, "--fixes", fixes] + option)
        #expect(replay.exitCode == 1)
        #expect(replay.standardOutput.isEmpty)
        #expect(
            replay.standardError == "Error: \(message)\nSee 'checkin replay --help'.\n", "\(option): \(replay.standardError)")
    }

    /// A number's option followed by a flag instead of its value does not run without the
    /// flag: the flag is refused as the option's value.
    @Test func aFlagInPlaceOfANumberIsRefused() async throws {
        let zones = try write(Self.zones(member: #""name": "Z""#), named: "zones.json")
        let fixes = try write(Self.fix, named: "trip.jsonl")
        let replay = try await CommandOutcome.run(["replay", "--zones", zones, "--fixes", fixes, "--max-accuracy", "--explain"])
        #expect(replay.exitCode != 0)
        #expect(replay.standardOutput.isEmpty)
        #expect(replay.standardError.contains("--max-accuracy"), "\(replay.standardError)")
    }

    /// A file that cannot be read is named with its option and what is wrong with it.
    @Test func aFileThatCannotBeReadIsNamedWithWhatIsWrong() async throws {
        let zones = try write(Self.zones(member: #""name": "Z""#), named: "zones.json")
        let fixes = try write(Self.fix, named: "trip.jsonl")
        let missing = directory.appendingPathComponent("missing.jsonl").path
        let refusals: [([String], String)] = [
            (["--zones", zones, "--fixes", directory.path], "--fixes \(directory.path): is a directory, not a file"),
            (["--zones", directory.path, "--fixes", fixes], "--zones \(directory.path): is a directory, not a file"),
            (["--zones", zones, "--fixes", missing], "--fixes \(missing): does not exist"),
            (["--zones", missing, "--fixes", fixes], "--zones \(missing): does not exist"),
            (["--zones", zones, "--fixes", "/dev/zero"], "--fixes /dev/zero: is a device, not a regular file or a pipe"),
        ]
        for (arguments, message) in refusals {
            let replay = try await CommandOutcome.run(["replay"] + arguments)
            #expect(replay.exitCode == 1, "\(arguments)")
            #expect(replay.standardOutput.isEmpty, "\(arguments)")
            #expect(replay.standardError == "Error: \(message)\n", "\(arguments): \(replay.standardError)")
        }
    }

    /// The null device is an empty file of fixes: nothing to replay, no error.
    @Test func theNullDeviceIsNoFixes() async throws {
        let zones = try write(Self.zones(member: #""name": "Z""#), named: "zones.json")
        let replay = try await CommandOutcome.run(["replay", "--zones", zones, "--fixes", "/dev/null"])
        #expect(replay.exitCode == 0, "\(replay.standardError)")
        #expect(replay.standardOutput.isEmpty)
        #expect(replay.standardError.hasPrefix("0 fix lines: 0 fixes evaluated"), "\(replay.standardError)")
    }
}
