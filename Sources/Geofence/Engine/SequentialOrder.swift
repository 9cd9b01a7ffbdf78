/// Where each zone with a sequential condition comes in a fix's decisions.
///
/// A zone follows at most one other zone (`afterZoneId`), so the conditions form
/// chains, possibly closing in a loop. A zone's depth is the number of zones its
/// chain runs through before it ends or repeats; a zone is always deeper than the
/// zone it follows unless both are in a loop (whose zones then share a depth).
/// Depths depend on the conditions alone, never on the order of the zones document,
/// which is what makes decisions independent of it.
enum SequentialOrder {
    /// `follows[z]` is the zone that z's sequential condition names. Zones that
    /// follow none have depth 0 and are not in the answer.
    static func depths(follows: [Int32: Int32]) -> [Int32: Int32] {
        var depth: [Int32: Int32] = [:]
        depth.reserveCapacity(follows.count)
        var path: [Int32] = []
        var positionOnPath: [Int32: Int] = [:]
        for start in follows.keys where depth[start] == nil {
            path.removeAll(keepingCapacity: true)
            positionOnPath.removeAll(keepingCapacity: true)
            var zone = start
            var reached: Int32
            // Walk the chain until a zone of known depth, a zone that follows none, or a loop.
            while true {
                if let known = depth[zone] {
                    reached = known
                    break
                }
                guard let next = follows[zone] else {
                    reached = 0
                    break
                }
                if let loopStart = positionOnPath[zone] {
                    let loop = path[loopStart...]
                    reached = Int32(loop.count)
                    for member in loop { depth[member] = reached }
                    path.removeSubrange(loopStart...)
                    break
                }
                positionOnPath[zone] = path.count
                path.append(zone)
                zone = next
            }
            for member in path.reversed() {
                reached += 1
                depth[member] = reached
            }
        }
        return depth
    }
}
