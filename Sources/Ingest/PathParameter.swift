import Foundation
import Hummingbird
import ServiceSupport
import Shared

extension Parameters {
    /// A path parameter as the client meant it. Clients percent-encode an identifier in a
    /// path (`bus%207`, `caf%C3%A9`) and the router hands it on undecoded; decoding it here
    /// makes the path name the same device, zone or endpoint as the identifier in a body.
    /// A 400 when the encoding is broken or is not UTF-8.
    func decoded(_ name: String) throws -> String {
        let raw = try require(name)
        guard let text = raw.removingPercentEncoding else {
            throw Problem.invalid(
                "the path's \(name) is not percent-encoded UTF-8",
                parameters: [.init(name: name, reason: "must be percent-encoded UTF-8, such as caf%C3%A9")])
        }
        return text
    }
}

extension ManagementRoutes {
    /// Whether a decoded path identifier could name anything. Text that cannot be an
    /// identifier (too long, control characters) was never stored, so the route answers as
    /// for an identifier it has not got, without handing Postgres a NUL it would refuse.
    static func couldBeIdentifier(_ text: String) -> Bool {
        InputLimits.identifierProblem(text) == nil
    }
}
