import Shared
import Testing

@Suite struct KeptAnswersTests {
    /// What was kept is answered by its exact text; past the capacity, the kept answers are
    /// dropped (and worked out again by their callers), so the memory stays bounded.
    @Test func answersWhatWasKeptUpToItsCapacity() {
        let kept = KeptAnswers<Int>(capacity: 2)
        #expect(kept.answer(to: "a") == nil)
        kept.keep(1, for: "a")
        kept.keep(2, for: "b")
        #expect(kept.answer(to: "a") == 1)
        #expect(kept.answer(to: "b") == 2)
        #expect(kept.answer(to: "A") == nil)
        kept.keep(3, for: "c")
        #expect(kept.answer(to: "a") == nil)
        #expect(kept.answer(to: "b") == nil)
        #expect(kept.answer(to: "c") == 3)
    }
}
