import Persistence

extension WebhookStore {
    /// A whole sweep of the mend pass at once: its steps from the first device to the last,
    /// as a notifier takes them over time. Returns how many deliveries it let go.
    @discardableResult
    func mendEveryWaitingHead(gapHold: Duration = .zero, step: Int = 1000) async throws -> Int {
        var (released, position) = try await mendWaitingHeads(after: nil, reading: step, gapHold: gapHold)
        while let after = position {
            let next = try await mendWaitingHeads(after: after, reading: step, gapHold: gapHold)
            released += next.released
            position = next.next
        }
        return released
    }
}
