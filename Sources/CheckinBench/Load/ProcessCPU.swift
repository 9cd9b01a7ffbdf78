import Foundation

/// CPU seconds of named process trees and of the whole machine, read from `/proc`, so that a
/// load run's cost is one figure per process: the services, Postgres (its postmaster and every
/// backend), the broker, the load itself.
struct ProcessCPUSample: Sendable {
    /// Each tree's CPU seconds so far: its live processes' own time plus what the processes it
    /// reaped spent (`cutime`/`cstime`), so a Postgres backend that ended still counts.
    var trees: [String: Double]
    /// Every CPU's busy time (user, nice, system, irq, softirq), steal excluded.
    var machineBusy: Double
    var machineSteal: Double

    /// Reads the trees rooted at `roots` (name → pid) and the machine's counters.
    static func read(roots: [String: Int32]) -> ProcessCPUSample {
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        let processes = ProcessTable.read()
        var trees: [String: Double] = [:]
        for (name, root) in roots {
            trees[name] = Double(processes.treeTicks(root: root)) / ticks
        }
        let (busy, steal) = machineTicks()
        return ProcessCPUSample(trees: trees, machineBusy: Double(busy) / ticks, machineSteal: Double(steal) / ticks)
    }

    /// The first line of `/proc/stat`: busy and steal ticks of all CPUs together.
    private static func machineTicks() -> (busy: Int, steal: Int) {
        guard let text = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
            let line = text.split(separator: "\n").first(where: { $0.hasPrefix("cpu ") })
        else { return (0, 0) }
        let fields = line.split(separator: " ").dropFirst().compactMap { Int($0) }
        guard fields.count >= 8 else { return (0, 0) }
        // user nice system idle iowait irq softirq steal
        return (fields[0] + fields[1] + fields[2] + fields[5] + fields[6], fields[7])
    }
}

/// The processes of this machine: each one's parent and CPU ticks.
private struct ProcessTable {
    struct Entry {
        var parent: Int32
        /// Own user and system ticks, plus those of the children it reaped.
        var ticks: Int
    }
    var entries: [Int32: Entry] = [:]
    var children: [Int32: [Int32]] = [:]

    static func read() -> ProcessTable {
        var table = ProcessTable()
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        for name in names {
            guard let pid = Int32(name), let entry = entry(pid: pid) else { continue }
            table.entries[pid] = entry
            table.children[entry.parent, default: []].append(pid)
        }
        return table
    }

    /// `/proc/<pid>/stat`: the fields after the command's closing parenthesis (which may hold spaces).
    private static func entry(pid: Int32) -> Entry? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ")
        // state ppid … utime(12th) stime cutime cstime
        guard fields.count > 14, let parent = Int32(fields[1]) else { return nil }
        let ticks = fields[11...14].compactMap { Int($0) }.reduce(0, +)
        return Entry(parent: parent, ticks: ticks)
    }

    func treeTicks(root: Int32) -> Int {
        var total = 0
        var pending = [root]
        while let pid = pending.popLast() {
            guard let entry = entries[pid] else { continue }
            total += entry.ticks
            pending += children[pid] ?? []
        }
        return total
    }
}

/// CPU spent over a run, per fix and per webhook, by process tree and for the whole machine.
struct CPUFigures: Codable, Sendable {
    /// Seconds of CPU per named tree over the run.
    var seconds: [String: Double]
    var machineSeconds: Double
    var stealSeconds: Double
    var wallSeconds: Double
    var microsecondsPerFix: [String: Double]
    var machineMicrosecondsPerFix: Double
    var machineMicrosecondsPerWebhook: Double?

    init(from start: ProcessCPUSample, to end: ProcessCPUSample, wallSeconds: Double, fixes: Int, webhooks: Int?) {
        var seconds: [String: Double] = [:]
        for (name, after) in end.trees { seconds[name] = max(0, after - (start.trees[name] ?? 0)) }
        let machine = end.machineBusy - start.machineBusy
        // What no named tree spent: other processes of the machine, the kernel's own work.
        seconds["other"] = max(0, machine - seconds.values.reduce(0, +))
        self.seconds = seconds
        self.machineSeconds = machine
        self.stealSeconds = end.machineSteal - start.machineSteal
        self.wallSeconds = wallSeconds
        self.microsecondsPerFix = seconds.mapValues { $0 / Double(fixes) * 1e6 }
        self.machineMicrosecondsPerFix = machine / Double(fixes) * 1e6
        self.machineMicrosecondsPerWebhook = webhooks.flatMap { $0 > 0 ? machine / Double($0) * 1e6 : nil }
    }

    var text: String {
        let parts = microsecondsPerFix.sorted { $0.value > $1.value }
            .map { String(format: "%@ %.1f", $0.key, $0.value) }
            .joined(separator: ", ")
        var line = String(
            format: "cpu: %.1f s of the machine's CPU over %.1f s = %.1f µs per fix (%@)", machineSeconds, wallSeconds,
            machineMicrosecondsPerFix, parts)
        if let perWebhook = machineMicrosecondsPerWebhook { line += String(format: ", %.0f µs per webhook", perWebhook) }
        if stealSeconds > 0.05 * machineSeconds { line += String(format: "; %.1f s stolen by the hypervisor", stealSeconds) }
        return line
    }
}
