import Shared

/// The per-zone conditions (docs/evaluation-rules.md#conditions), each a pure function of the triggering fix.
enum ConditionRules {
    /// Both bounds inclusive; a fix without a speed cannot satisfy a speed condition.
    static func speedHolds(_ conditions: ZoneConditions, speed: Double?) -> Bool {
        guard conditions.minSpeed != nil || conditions.maxSpeed != nil else { return true }
        guard let speed else { return false }
        if let minimum = conditions.minSpeed, speed < minimum { return false }
        if let maximum = conditions.maxSpeed, speed > maximum { return false }
        return true
    }

    /// Clockwise from `from` to `to`, both inclusive; `350 → 10` wraps through north.
    static func bearingHolds(_ range: BearingRange?, bearing: Double?) -> Bool {
        guard let range else { return true }
        guard let bearing else { return false }
        let b = normalized(bearing)
        let from = normalized(range.from)
        let to = normalized(range.to)
        if from <= to { return b >= from && b <= to }
        return b >= from || b <= to
    }

    static func normalized(_ degrees: Double) -> Double {
        let value = degrees.truncatingRemainder(dividingBy: 360)
        return value < 0 ? value + 360 : value
    }

    /// `depth` metres in from the boundary out of `deepest` possible.
    static func percentageHolds(_ required: Double?, depth: Double, deepest: Double) -> Bool {
        guard let required else { return true }
        guard deepest > 0 else { return required <= 0 }
        return depth / deepest * 100 >= required
    }

    /// The earlier zone's check-in must be no more than `withinSeconds` before `time`.
    static func sequentialHolds(_ condition: SequentialCondition?, earlierCheckIn: Double?, time: Double) -> Bool {
        guard let condition else { return true }
        guard let earlierCheckIn else { return false }
        let elapsed = time - earlierCheckIn
        return elapsed >= 0 && elapsed <= condition.withinSeconds
    }
}
