import Synchronization

/// Answers already worked out, by the exact text they answer: for what depends on that text
/// alone and is asked for again with every delivery (an endpoint's URL checked, a secret
/// opened). Only what the caller keeps is kept, so a question it refused is asked in full
/// again. Bounded: emptied when full.
public final class KeptAnswers<Answer: Sendable>: Sendable {
    private let answers = Mutex<[String: Answer]>([:])
    private let capacity: Int

    /// `capacity` far above the endpoints or secrets one process sends with.
    public init(capacity: Int = 4096) {
        self.capacity = max(capacity, 1)
    }

    public func answer(to question: String) -> Answer? {
        answers.withLock { $0[question] }
    }

    public func keep(_ answer: Answer, for question: String) {
        answers.withLock { answers in
            if answers.count >= capacity { answers.removeAll(keepingCapacity: true) }
            answers[question] = answer
        }
    }
}
