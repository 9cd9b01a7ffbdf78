/// A webhook URL taken apart once, by this code, so that the host that is checked
/// is the host that is connected to (no second parser reading the URL differently).
public struct WebhookTarget: Sendable, Equatable {
    public var scheme: String
    /// Lower-cased, without brackets or a trailing dot; a numeric IPv4 host in dotted-quad form.
    public var host: String
    public var port: Int
    /// Path and query, at least `/`.
    public var pathAndQuery: String
    /// Set when the host is an IP address literal rather than a name to resolve.
    public var address: IPAddress?

    public var isHTTPS: Bool { scheme == "https" }

    /// The `Host` header: the port only when it is not the scheme's default.
    public var hostHeader: String {
        let name = address.map { if case .v6 = $0 { "[\(host)]" } else { host } } ?? host
        return port == (isHTTPS ? 443 : 80) ? name : "\(name):\(port)"
    }
}

/// Why a webhook URL is refused, worded for the partner's operator.
public struct WebhookURLProblem: Error, Sendable, Equatable, CustomStringConvertible {
    public var reason: String
    public init(_ reason: String) { self.reason = reason }
    public var description: String { reason }
}

/// Which webhook URLs the pipeline accepts and connects to: `https` to public
/// addresses only, unless a local set-up allows `http` and private addresses
/// (`CHECKIN_WEBHOOK_ALLOW_HTTP`, `CHECKIN_WEBHOOK_ALLOW_PRIVATE`).
public struct WebhookURLPolicy: Sendable, Equatable {
    public static let allowPrivateVariable = "CHECKIN_WEBHOOK_ALLOW_PRIVATE"
    public static let allowHTTPVariable = "CHECKIN_WEBHOOK_ALLOW_HTTP"

    public var allowPrivateAddresses: Bool
    public var allowHTTP: Bool

    public init(allowPrivateAddresses: Bool = false, allowHTTP: Bool = false) {
        self.allowPrivateAddresses = allowPrivateAddresses
        self.allowHTTP = allowHTTP
    }

    /// Production: https to public addresses only.
    public static let strict = WebhookURLPolicy()
    /// Local development and tests: receivers on this machine over plain http.
    public static let local = WebhookURLPolicy(allowPrivateAddresses: true, allowHTTP: true)

    /// Names that only ever mean this machine or an internal network.
    static let internalNameSuffixes = [".localhost", ".local", ".internal", ".home.arpa", ".localdomain"]

    /// Checks a URL as given by a user, before any DNS lookup.
    public func check(_ url: String) throws(WebhookURLProblem) -> WebhookTarget {
        let target = try Self.parse(url)
        if !target.isHTTPS && !allowHTTP {
            throw WebhookURLProblem("must use https (http is allowed only when \(Self.allowHTTPVariable)=true)")
        }
        guard !allowPrivateAddresses else { return target }
        if let address = target.address {
            try checkAddress(address, of: target.host)
        } else if target.host == "localhost" || Self.internalNameSuffixes.contains(where: target.host.hasSuffix) {
            throw WebhookURLProblem("host \(target.host) names this machine or an internal network; \(allowHint)")
        } else if !target.host.contains(".") {
            throw WebhookURLProblem("host \(target.host) is a single-label name, which only resolves inside a network; \(allowHint)")
        }
        return target
    }

    /// Checks an address a host name resolved to, right before connecting to it.
    public func checkAddress(_ address: IPAddress, of host: String) throws(WebhookURLProblem) {
        guard !allowPrivateAddresses, let reason = address.nonPublicReason else { return }
        let shown = host == address.description ? host : "\(host) (\(address))"
        let article = "aeiouAEIOU".contains(reason.rawValue.first ?? "x") ? "an" : "a"
        throw WebhookURLProblem("\(shown) is \(article) \(reason.rawValue) address, not a public one; \(allowHint)")
    }

    private var allowHint: String { "only public addresses are allowed unless \(Self.allowPrivateVariable)=true" }

    /// Splits `scheme://host[:port][/path][?query]`; refuses what a partner URL never
    /// needs and parsers disagree on: credentials, percent-encoded or non-ASCII hosts,
    /// backslashes, whitespace.
    public static func parse(_ url: String) throws(WebhookURLProblem) -> WebhookTarget {
        guard url.utf8.count <= 2048 else { throw WebhookURLProblem("is longer than 2048 bytes") }
        guard url.unicodeScalars.allSatisfy({ $0.isASCII && $0.value > 0x20 && $0.value != 0x7f }) else {
            throw WebhookURLProblem("must be ASCII without spaces or control characters (use punycode for international names)")
        }
        guard !url.contains("\\") else { throw WebhookURLProblem("must not contain a backslash") }
        guard let schemeEnd = url.range(of: "://") else {
            throw WebhookURLProblem("must be an absolute https URL (https://host/path)")
        }
        let scheme = url[..<schemeEnd.lowerBound].lowercased()
        guard scheme == "https" || scheme == "http" else {
            throw WebhookURLProblem("scheme \(scheme) is not https")
        }
        var rest = url[schemeEnd.upperBound...]
        if let fragment = rest.firstIndex(of: "#") { rest = rest[..<fragment] }
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        var pathAndQuery = String(rest[authorityEnd...])
        if pathAndQuery.isEmpty || pathAndQuery.hasPrefix("?") { pathAndQuery = "/" + pathAndQuery }
        guard !authority.contains("@") else { throw WebhookURLProblem("must not contain credentials (user@host)") }

        var hostText: Substring
        var portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw WebhookURLProblem("has an unclosed [ in its host") }
            hostText = authority[authority.index(after: authority.startIndex)..<close]
            let afterHost = authority[authority.index(after: close)...]
            if !afterHost.isEmpty {
                guard afterHost.hasPrefix(":") else { throw WebhookURLProblem("has text after its [host]") }
                portText = afterHost.dropFirst()
            }
            guard IPAddress(host: String(hostText)) != nil, hostText.contains(":") else {
                throw WebhookURLProblem("[\(hostText)] is not an IPv6 address")
            }
        } else {
            let parts = authority.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            hostText = parts[0]
            portText = parts.count > 1 ? parts[1] : nil
        }
        let port: Int
        if let portText {
            guard let value = Int(portText), (1...65_535).contains(value), portText.allSatisfy(\.isNumber) else {
                throw WebhookURLProblem("port \(portText) is not a number in 1...65535")
            }
            port = value
        } else {
            port = scheme == "https" ? 443 : 80
        }

        var host = hostText.lowercased()
        if host.hasSuffix(".") { host.removeLast() }
        guard !host.isEmpty else { throw WebhookURLProblem("has no host") }
        if let address = IPAddress(host: host) {
            return WebhookTarget(scheme: scheme, host: address.description, port: port, pathAndQuery: pathAndQuery, address: address)
        }
        if IPAddress.looksNumeric(host) { throw WebhookURLProblem("host \(host) is not a valid IP address") }
        let allowed = host.unicodeScalars.allSatisfy { scalar in
            (scalar.properties.isASCIIHexDigit || ("g"..."z").contains(scalar) || scalar == "-" || scalar == "." || scalar == "_")
        }
        guard allowed, !host.contains(".."), host.utf8.count <= 253 else {
            throw WebhookURLProblem("host \(host) is not a valid host name")
        }
        return WebhookTarget(scheme: scheme, host: host, port: port, pathAndQuery: pathAndQuery, address: nil)
    }
}
