/// A fix's `beacons` member: its sightings and their problems, read as it is met so
/// that nothing of it has to be kept, and judged with the rest of the fix.
enum BeaconList {
    case absent, null, notAList
    /// `count` items; only the first `FixValidator.maximumBeaconsPerFix` are checked,
    /// since a longer list is refused whole.
    case list(count: Int, sightings: [BeaconSighting], problems: [FieldProblem])

    /// The list at hand, and whether it holds a number `JSONSerialization` cannot hold.
    static func read(_ scanner: inout JSONScanner, _ context: FixContext) throws(JSONSyntaxError)
        -> (BeaconList, holdsUnrepresentable: Bool)
    {
        let path = context.path
        switch try scanner.valueKind() {
        case .null:
            try scanner.readNull()
            return (.null, false)
        case .array:
            var count = 0
            var sightings: [BeaconSighting] = []
            var problems: [FieldProblem] = []
            var holdsUnrepresentable = false
            guard try scanner.enterArray() else { return (.list(count: 0, sightings: [], problems: []), false) }
            repeat {
                if count < FixValidator.maximumBeaconsPerFix {
                    let (sighting, holds) = try BeaconMembers.sighting(
                        &scanner, path: path.beacon(count), refusesUnknownMembers: context.refusesUnknownMembers)
                    switch sighting {
                    case .success(let sighting): sightings.append(sighting)
                    case .failure(let invalid): problems.append(contentsOf: invalid.problems)
                    }
                    if holds { holdsUnrepresentable = true }
                } else if try scanner.skipValue() {
                    holdsUnrepresentable = true
                }
                count += 1
            } while try scanner.nextElement()
            return (.list(count: count, sightings: sightings, problems: problems), holdsUnrepresentable)
        default:
            return (.notAList, try scanner.skipValue())
        }
    }
}

/// The members of one beacon sighting, each the last of its name.
struct BeaconMembers {
    var uuid = FieldValue.absent
    var major = FieldValue.absent
    var minor = FieldValue.absent
    var eddystoneId = FieldValue.absent
    var rssi = FieldValue.absent
    var unknown = UnknownMembers()

    /// Reads the item at hand and judges it as `FixValidator.validateBeacon` does; also
    /// whether it holds a number `JSONSerialization` cannot hold.
    static func sighting(_ scanner: inout JSONScanner, path: String, refusesUnknownMembers: Bool) throws(JSONSyntaxError)
        -> (Result<BeaconSighting, InvalidFix>, holdsUnrepresentable: Bool)
    {
        guard try scanner.valueKind() == .object else {
            let holds = try scanner.skipValue()
            return (.failure(InvalidFix([FieldProblem(field: path, problem: "must be a JSON object")])), holds)
        }
        var members = BeaconMembers()
        var unrepresentable = UnrepresentableMembers()
        if try scanner.enterObject() {
            repeat {
                let key = try scanner.readKey()
                let holds: Bool
                if scanner.string(key, is: "uuid") {
                    (members.uuid, holds) = try FieldValue.read(&scanner)
                } else if scanner.string(key, is: "major") {
                    (members.major, holds) = try FieldValue.read(&scanner)
                } else if scanner.string(key, is: "minor") {
                    (members.minor, holds) = try FieldValue.read(&scanner)
                } else if scanner.string(key, is: "eddystoneId") {
                    (members.eddystoneId, holds) = try FieldValue.read(&scanner)
                } else if scanner.string(key, is: "rssi") {
                    (members.rssi, holds) = try FieldValue.read(&scanner)
                } else {
                    if refusesUnknownMembers { members.unknown.append(scanner.string(key)) }
                    holds = try scanner.skipValue()
                }
                unrepresentable.record(key, holdsUnrepresentable: holds, in: scanner)
            } while try scanner.nextMember()
        }
        return (members.sighting(scanner, path: path), !unrepresentable.isEmpty)
    }

    func sighting(_ scanner: JSONScanner, path: String) -> Result<BeaconSighting, InvalidFix> {
        var problems = unknown.problems(field: { "\(path).\($0)" }, notAMemberOf: "a beacon sighting")
        func integer(_ name: String, _ value: FieldValue, _ range: ClosedRange<Int>) -> Int? {
            if value.isAbsentOrNull { return nil }
            guard case .number(let number) = value, number.rounded() == number, range.contains(Int(exactly: number) ?? Int.min)
            else {
                problems.append(
                    FieldProblem(field: "\(path).\(name)", problem: "must be an integer in \(range.lowerBound)...\(range.upperBound)"))
                return nil
            }
            return Int(number)
        }
        func beaconIdentifier(_ name: String, _ value: FieldValue) -> String? {
            if value.isAbsentOrNull { return nil }
            guard case .string(let token) = value else {
                problems.append(FieldProblem(field: "\(path).\(name)", problem: "must be a string"))
                return nil
            }
            let text = scanner.string(token)
            if let problem = InputLimits.identifierProblem(text) {
                problems.append(FieldProblem(field: "\(path).\(name)", problem: problem))
                return nil
            }
            return text
        }
        let uuid = beaconIdentifier("uuid", self.uuid)
        let eddystoneId = beaconIdentifier("eddystoneId", self.eddystoneId)
        let major = integer("major", self.major, 0...65_535)
        let minor = integer("minor", self.minor, 0...65_535)
        let rssi = integer("rssi", self.rssi, -200...20)
        if self.rssi.isAbsentOrNull {
            problems.append(FieldProblem(field: "\(path).rssi", problem: "is required"))
        }
        if !self.uuid.isString && !self.eddystoneId.isString {
            problems.append(FieldProblem(field: "\(path).uuid", problem: "a beacon needs a uuid or an eddystoneId"))
        }
        guard problems.isEmpty, let rssi else { return .failure(InvalidFix(problems)) }
        return .success(
            BeaconSighting(uuid: uuid?.uppercased(), major: major, minor: minor, eddystoneId: eddystoneId?.lowercased(), rssi: rssi))
    }
}
