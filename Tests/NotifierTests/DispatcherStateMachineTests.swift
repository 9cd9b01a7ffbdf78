import Persistence
import Testing

@testable import Notifier

/// The rules the dispatcher's tasks keep between them: room for claims, held leases, when to
/// claim, what is given back, and in which order it stops.
@Suite struct DispatcherStateMachineTests {
    typealias Machine = DispatcherStateMachine

    static func attempt(_ id: Int64, endpoint: String, project: String = "p") -> DeliveryAttempt {
        DeliveryAttempt(
            id: id, endpointId: endpoint, projectId: project, url: "http://x", secrets: [], eventId: "e\(id)",
            deviceId: "d\(id)", sequence: 1, payload: "{}", attempt: 1)
    }

    /// `count` deliveries to `endpoint`, numbered from `first`.
    static func attempts(_ count: Int, from first: Int64, endpoint: String) -> [DeliveryAttempt] {
        (0..<Int64(count)).map { attempt(first + $0, endpoint: endpoint) }
    }

    /// Four slots, `endpointConcurrency` per endpoint: a capacity of 32.
    static func machine(
        endpointConcurrency: Int = 2, resultBatch: Int = 2000, claimsSuccessorsWithResults: Bool = true,
        claimsWhenQueued: Bool = true
    ) -> Machine {
        var configuration = NotifierConfiguration(
            concurrency: 4, endpointConcurrency: endpointConcurrency,
            claimsSuccessorsWithResults: claimsSuccessorsWithResults, claimsWhenQueued: claimsWhenQueued)
        configuration.resultBatch = resultBatch
        return Machine(configuration: configuration)
    }

    /// A running machine whose claimer has a claim out, as after the first turn.
    static func claiming(_ machine: inout Machine) -> Machine.ClaimAction {
        _ = machine.wake()
        #expect(machine.dispatchTurn(at: .now).wakeClaimer)
        return machine.claimRequested()
    }

    @Test func whatArrivesBeforeRunWaitsForTheFirstTurn() {
        var machine = Self.machine()
        #expect(machine.roomForQueuedClaim() == Machine.Room(free: 32, saturated: []))
        #expect(machine.adopt(Self.attempts(3, from: 1, endpoint: "a")).wakesLoop)
        #expect(machine.roomForQueuedClaim()?.free == 29)
        #expect(Set(machine.leasesToRenew) == [1, 2, 3])
        machine.startRunning()
        let turn = machine.dispatchTurn(at: .now)
        #expect(turn.send.map(\.id) == [1, 2])
        #expect(turn.wakeClaimer)
        #expect(Self.machine(claimsWhenQueued: false).roomForQueuedClaim() == nil)
    }

    @Test func aTurnStartsEachEndpointsShareAndNoMore() {
        var machine = Self.machine()
        machine.startRunning()
        _ = machine.adopt(Self.attempts(10, from: 0, endpoint: "slow"))
        _ = machine.adopt(Self.attempts(2, from: 10, endpoint: "fast"))
        let first = machine.dispatchTurn(at: .now)
        #expect(first.send.map(\.endpointId).sorted() == ["fast", "fast", "slow", "slow"])
        #expect(machine.room == Machine.Room(free: 32 - 12, saturated: ["slow"]))
        #expect(machine.attemptFinished(endpointId: "fast", endpointDisabled: false).wakesLoop)
        // The free slot cannot go to the slow endpoint, which has its two.
        #expect(machine.dispatchTurn(at: .now).send.isEmpty)
        _ = machine.attemptFinished(endpointId: "slow", endpointDisabled: false)
        #expect(machine.dispatchTurn(at: .now).send.map(\.endpointId) == ["slow"])
    }

    /// Sent and not yet written, a delivery still holds its lease: while a whole batch of
    /// those waits for the recorder, nothing more is claimed.
    @Test func claimsWaitWhileABatchOfResultsIsUnwritten() {
        var machine = Self.machine(endpointConcurrency: 4, resultBatch: 3)
        machine.startRunning()
        _ = machine.adopt((1...4).map { Self.attempt($0, endpoint: "e\($0)") })
        #expect(machine.dispatchTurn(at: .now).send.count == 4)
        #expect(machine.room.free == 28)
        for id in 1...3 { _ = machine.attemptFinished(endpointId: "e\(id)", endpointDisabled: false) }
        _ = machine.dispatchTurn(at: .now)
        #expect(machine.room.free == 0)
        #expect(machine.roomForQueuedClaim() == nil)
        #expect(machine.claimRequested() == .wait)
        #expect(machine.resultsRecorded([1, 2, 3], claimed: []).wakesLoop)
        _ = machine.dispatchTurn(at: .now)
        #expect(machine.room.free == 31)
        #expect(machine.leasesToRenew == [4])
    }

    @Test func leasesAreHeldFromClaimToResultOrRelease() {
        var machine = Self.machine()
        machine.startRunning()
        _ = machine.adopt(Self.attempts(2, from: 1, endpoint: "a"))
        _ = machine.dispatchTurn(at: .now)
        _ = machine.attemptFinished(endpointId: "a", endpointDisabled: false)
        // A result claims the device's next delivery with it: held from then on, and sent.
        #expect(machine.resultsRecorded([1], claimed: [Self.attempt(7, endpoint: "a")]).wakesLoop)
        #expect(Set(machine.leasesToRenew) == [2, 7])
        #expect(machine.dispatchTurn(at: .now).send.map(\.id) == [7])
    }

    /// A burst of wake-ups is one turn and one claim; a turn with nothing new claims only
    /// when fewer are queued than there are slots.
    @Test func wakeUpsAreTakenWholeByOneTurn() {
        var machine = Self.machine(endpointConcurrency: 1)
        machine.startRunning()
        for _ in 0..<5 { #expect(machine.wake().wakesLoop) }
        _ = machine.adopt((1...8).map { Self.attempt($0, endpoint: "e\($0)") })
        let turn = machine.dispatchTurn(at: .now)
        #expect(turn.send.count == 4)
        #expect(turn.wakeClaimer)
        // Four queued, as many as there are slots, and no wake-up: no claim.
        #expect(!machine.dispatchTurn(at: .now).wakeClaimer)
        #expect(machine.claimRequested() == .claim(limit: 24, perEndpoint: 2, excluding: []))
    }

    /// A full claim claims again at once when the loop made room meanwhile; one that comes back
    /// short waits for a wake-up.
    @Test func aFullClaimClaimsAgainAndAShortOneWaitsForAWakeUp() throws {
        var machine = Self.machine(endpointConcurrency: 4)
        machine.startRunning()
        _ = machine.adopt((1...22).map { Self.attempt($0, endpoint: "e\($0)") })
        #expect(Self.claiming(&machine) == .claim(limit: 10, perEndpoint: 8, excluding: []))
        // While the claim is out, four attempts are recorded and four more start.
        for id in 1...4 { _ = machine.attemptFinished(endpointId: "e\(id)", endpointDisabled: false) }
        _ = machine.resultsRecorded([1, 2, 3, 4], claimed: [])
        #expect(machine.dispatchTurn(at: .now).send.count == 4)
        #expect(machine.room.free == 14)
        let full = machine.claimReturned((100..<110).map { Self.attempt($0, endpoint: "n\($0)") })
        #expect(full.adopted.wakesLoop)
        #expect(full.next == .claim(limit: 4, perEndpoint: 8, excluding: []))
        let short = machine.claimReturned([Self.attempt(200, endpoint: "n200")])
        #expect(short.next == .wait)
        _ = machine.dispatchTurn(at: .now)
        try #require(machine.claimRequested() == .wait)
        _ = machine.wake()
        _ = machine.dispatchTurn(at: .now)
        guard case .claim = machine.claimRequested() else {
            Issue.record("a wake-up claims again")
            return
        }
    }

    /// After a short claim, claims wait until an endpoint it passed over (held full, or filled
    /// by that claim) has room again.
    @Test func aShortClaimWaitsForRoomAtAnEndpointItPassedOver() throws {
        var machine = Self.machine()
        machine.startRunning()
        _ = machine.adopt(Self.attempts(5, from: 0, endpoint: "slow"))
        guard case .claim(_, _, let excluding) = Self.claiming(&machine) else {
            Issue.record("no claim")
            return
        }
        #expect(excluding == ["slow"])
        // The claim filled "busy" (four, one endpoint's most for a claim) and no more was due.
        _ = machine.claimReturned(Self.attempts(4, from: 10, endpoint: "busy"))
        #expect(machine.claimer == .drained(passedOver: ["slow", "busy"]))
        let start = ContinuousClock.now
        _ = machine.dispatchTurn(at: start)
        #expect(machine.room.saturated.sorted() == ["busy", "slow"])
        try #require(machine.claimRequested() == .wait)
        // Both of slow's attempts end and two more start: three held, fewer than its allowance.
        for _ in 0..<2 { _ = machine.attemptFinished(endpointId: "slow", endpointDisabled: false) }
        #expect(machine.dispatchTurn(at: start).send.map(\.endpointId) == ["slow", "slow"])
        #expect(!machine.room.saturated.contains("slow"))
        guard case .claim = machine.claimRequested() else {
            Issue.record("room at a passed-over endpoint claims again")
            return
        }
    }

    @Test func aFailedClaimWaitsForAWakeUp() throws {
        var machine = Self.machine()
        machine.startRunning()
        _ = Self.claiming(&machine)
        #expect(machine.claimFailed() == .wait)
        _ = machine.dispatchTurn(at: .now)
        try #require(machine.claimRequested() == .wait)
        _ = machine.wake()
        _ = machine.dispatchTurn(at: .now)
        #expect(machine.claimRequested() == .claim(limit: 32, perEndpoint: 4, excluding: []))
    }

    /// Chaining, a recorded result claims its successor itself: it is no reason to claim after
    /// a short claim. Without chaining it is (its successor may be due).
    @Test func aRecordedResultWakesTheClaimsOnlyWithoutChaining() {
        for chaining in [true, false] {
            var machine = Self.machine(claimsSuccessorsWithResults: chaining)
            machine.startRunning()
            _ = Self.claiming(&machine)
            _ = machine.claimReturned([])
            #expect(machine.resultsRecorded([], claimed: []).wakesLoop)
            #expect(machine.dispatchTurn(at: .now).wakeClaimer)
            #expect((machine.claimRequested() == .wait) == chaining, "chaining: \(chaining)")
        }
    }

    @Test func aDisabledEndpointsQueuedDeliveriesAreGivenBackNotSent() {
        var machine = Self.machine()
        machine.startRunning()
        _ = machine.adopt(Self.attempts(5, from: 1, endpoint: "gone"))
        _ = machine.adopt([Self.attempt(9, endpoint: "other")])
        #expect(machine.dispatchTurn(at: .now).send.count == 3)
        _ = machine.attemptFinished(endpointId: "gone", endpointDisabled: true)
        let turn = machine.dispatchTurn(at: .now)
        #expect(turn.send.isEmpty)
        #expect(turn.releaseDisabled.map(\.id).sorted() == [3, 4, 5])
        #expect(Set(machine.leasesToRenew) == [1, 2, 9])
    }

    /// An endpoint that started none for a second gives back what it holds beyond its allowance.
    @Test func anEndpointThatStopsGivesBackItsSurplus() {
        var machine = Self.machine()
        machine.startRunning()
        let start = ContinuousClock.now
        _ = machine.adopt(Self.attempts(10, from: 1, endpoint: "stuck"))
        #expect(machine.dispatchTurn(at: start).releaseSurplus.isEmpty)
        let later = machine.dispatchTurn(at: start + .milliseconds(1500))
        #expect(later.releaseSurplus.map(\.id) == [10, 9, 8, 7, 6, 5])
        #expect(Set(machine.leasesToRenew) == [1, 2, 3, 4])
        #expect(machine.room == Machine.Room(free: 28, saturated: ["stuck"]))
    }

    /// Stopping: what was not started is given back at once; what is claimed while the
    /// attempts in flight finish is given back at the end; and only a notifier left holding
    /// nothing says it stopped renewing.
    @Test func stoppingGivesBackWhatWasNotSent() {
        var machine = Self.machine()
        machine.startRunning()
        _ = machine.adopt(Self.attempts(6, from: 1, endpoint: "a"))
        #expect(Self.claiming(&machine) == .claim(limit: 26, perEndpoint: 4, excluding: ["a"]))
        _ = machine.adopt([Self.attempt(7, endpoint: "b")])
        #expect(machine.dispatchStopped().map(\.id).sorted() == [3, 4, 5, 6, 7])
        #expect(Set(machine.leasesToRenew) == [1, 2])
        #expect(machine.roomForQueuedClaim() == nil)
        #expect(!machine.wake().wakesLoop)
        // The claim that was out comes back: held until the end, and no more claims.
        let late = machine.claimReturned([Self.attempt(20, endpoint: "c")])
        #expect(!late.adopted.wakesLoop)
        #expect(late.next == .wait)
        #expect(machine.claimRequested() == .wait)
        #expect(!machine.attemptFinished(endpointId: "a", endpointDisabled: false).wakesLoop)
        #expect(!machine.resultsRecorded([1], claimed: [Self.attempt(30, endpoint: "a")]).wakesLoop)
        #expect(Set(machine.leasesToRenew) == [2, 20, 30])
        let ending = machine.finish()
        #expect(ending.release.map(\.id).sorted() == [20, 30])
        // Delivery 2's result was never written: it still holds a lease.
        #expect(!ending.stopRenewing)
        // Claimed by the intake as the dispatcher finished: given back at once.
        #expect(machine.adopt([Self.attempt(40, endpoint: "a")]).released == [40])
    }

    @Test func aNotifierHoldingNothingAtTheEndSaysItStoppedRenewing() {
        var machine = Self.machine()
        machine.startRunning()
        _ = machine.adopt([Self.attempt(1, endpoint: "a")])
        #expect(machine.dispatchTurn(at: .now).send.count == 1)
        #expect(machine.dispatchStopped().isEmpty)
        _ = machine.resultsRecorded([1], claimed: [Self.attempt(2, endpoint: "a")])
        let ending = machine.finish()
        #expect(ending.release.map(\.id) == [2])
        #expect(ending.stopRenewing)
    }

    @Test func transitionsThatCannotHappenTrap() async {
        await #expect(processExitsWith: .failure) {
            var machine = DispatcherStateMachineTests.machine()
            _ = machine.dispatchTurn(at: .now)
        }
        await #expect(processExitsWith: .failure) {
            var machine = DispatcherStateMachineTests.machine()
            machine.startRunning()
            _ = machine.claimReturned([])
        }
        await #expect(processExitsWith: .failure) {
            var machine = DispatcherStateMachineTests.machine()
            machine.startRunning()
            _ = DispatcherStateMachineTests.claiming(&machine)
            _ = machine.claimRequested()
        }
        await #expect(processExitsWith: .failure) {
            var machine = DispatcherStateMachineTests.machine()
            machine.startRunning()
            _ = machine.dispatchStopped()
            _ = machine.finish()
            _ = machine.resultsRecorded([1], claimed: [])
        }
    }
}

extension DispatcherStateMachine.EventAction {
    var wakesLoop: Bool {
        if case .wakeDispatchLoop = self { return true }
        return false
    }

    var released: [Int64]? {
        if case .release(let deliveries) = self { return deliveries.map(\.id) }
        return nil
    }
}
