import Shared
import Testing

@Suite struct WebhookURLPolicyTests {
    /// Every class of non-public address, in every way of writing one, with the word the refusal must use.
    static let refused: [(url: String, reason: String)] = [
        ("https://127.0.0.1/hook", "loopback"),
        ("https://127.255.255.254/", "loopback"),
        ("https://localhost/hook", "names this machine"),
        ("https://LOCALHOST./hook", "names this machine"),
        ("https://api.localhost/hook", "names this machine"),
        ("https://metadata.google.internal/", "names this machine"),
        ("https://intranet/hook", "single-label"),
        ("https://[::1]/hook", "loopback"),
        ("https://0.0.0.0/hook", "unspecified"),
        ("https://[::]/hook", "unspecified"),
        ("https://0/hook", "unspecified"),
        ("https://169.254.169.254/latest/meta-data/", "cloud metadata"),
        ("https://169.254.10.1/", "link-local"),
        ("https://[fe80::1]/", "link-local"),
        ("https://10.1.2.3/", "private"),
        ("https://172.16.0.1/", "private"),
        ("https://172.31.255.255/", "private"),
        ("https://192.168.0.10/", "private"),
        ("https://[fc00::1]/", "private"),
        ("https://[fd00:ec2::254]/", "private"),
        ("https://100.64.0.1/", "carrier-grade NAT"),
        ("https://100.127.255.255/", "carrier-grade NAT"),
        ("https://224.0.0.1/", "multicast"),
        ("https://[ff02::1]/", "multicast"),
        ("https://255.255.255.255/", "broadcast"),
        ("https://240.0.0.1/", "reserved"),
        ("https://0.1.2.3/", "reserved"),
        ("https://198.18.0.1/", "reserved"),
        ("https://192.0.2.1/", "documentation"),
        ("https://[2001:db8::1]/", "documentation"),
        // Numeric host forms are normalised before the check.
        ("https://2130706433/", "127.0.0.1 is a loopback"),
        ("https://0x7f000001/", "127.0.0.1 is a loopback"),
        ("https://017700000001/", "127.0.0.1 is a loopback"),
        ("https://0177.0.0.1/", "127.0.0.1 is a loopback"),
        ("https://0x7f.0.0.1/", "127.0.0.1 is a loopback"),
        ("https://127.1/", "127.0.0.1 is a loopback"),
        ("https://127.0.1/", "127.0.0.1 is a loopback"),
        ("https://0xa9.0xfe.0xa9.0xfe/", "169.254.169.254 is a cloud metadata"),
        ("https://2852039166/", "169.254.169.254 is a cloud metadata"),
        ("https://012.1/", "10.0.0.1 is a private"),
        // IPv6 forms of IPv4 addresses.
        ("https://[::ffff:127.0.0.1]/", "IPv4-mapped"),
        ("https://[::ffff:7f00:1]/", "IPv4-mapped"),
        ("https://[::ffff:8.8.8.8]/", "IPv4-mapped"),
        ("https://[::127.0.0.1]/", "IPv4-compatible"),
        ("https://[64:ff9b::10.0.0.1]/", "private"),
        ("https://[64:ff9b::7f00:1]/", "loopback"),
        ("https://[64:ff9b:1::1]/", "local-use NAT64"),
        ("https://[2002:7f00:1::]/", "loopback"),
        ("https://[2002:a9fe:a9fe::]/", "cloud metadata"),
        // What parsers disagree on is refused outright.
        ("https://1.2.3.999/", "not a valid IP address"),
        ("https://1.2.3.08/", "not a valid IP address"),
        ("https://[fe80::1%25eth0]/", "not an IPv6 address"),
        ("https://evil.example@127.0.0.1/", "credentials"),
        ("https://user:pw@hooks.example.com/", "credentials"),
        ("https://hooks.example.com\\@127.0.0.1/", "backslash"),
        ("https://127.0.0.%31/", "not a valid host name"),
        ("https://hooks.example.com:0/", "port"),
        ("https://hooks.example.com:99999/", "port"),
        ("https:///hook", "no host"),
        ("ftp://hooks.example.com/", "not https"),
        ("hooks.example.com/hook", "absolute https URL"),
        ("https://exämple.com/", "ASCII"),
        ("https://hooks.example.com/a b", "ASCII"),
    ]

    @Test(arguments: refused)
    func refusesNonPublicAndAmbiguousURLs(_ url: String, _ reason: String) {
        do {
            _ = try WebhookURLPolicy.strict.check(url)
            Issue.record("\(url) was accepted")
        } catch {
            #expect(error.reason.contains(reason), "\(url): \(error.reason)")
        }
    }

    @Test func acceptsHTTPSToPublicAddresses() throws {
        let named = try WebhookURLPolicy.strict.check("https://Hooks.Example.com:8443/in?a=1#part")
        #expect(named.scheme == "https" && named.host == "hooks.example.com" && named.port == 8443 && named.address == nil)
        #expect(named.pathAndQuery == "/in?a=1")
        #expect(named.hostHeader == "hooks.example.com:8443")
        #expect(try WebhookURLPolicy.strict.check("https://8.8.8.8").pathAndQuery == "/")
        #expect(try WebhookURLPolicy.strict.check("https://[2606:4700:4700::1111]/x").hostHeader == "[2606:4700:4700::1111]")
        #expect(try WebhookURLPolicy.strict.check("https://[64:ff9b::808:808]/").address == IPAddress(host: "64:ff9b::808:808"))
        #expect(try WebhookURLPolicy.strict.check("https://134744072/").host == "8.8.8.8")
    }

    @Test func plainHTTPNeedsItsOwnAllowance() throws {
        #expect(throws: WebhookURLProblem("must use https (http is allowed only when CHECKIN_WEBHOOK_ALLOW_HTTP=true)")) {
            try WebhookURLPolicy(allowPrivateAddresses: true, allowHTTP: false).check("http://hooks.example.com/")
        }
        #expect(try WebhookURLPolicy(allowPrivateAddresses: false, allowHTTP: true).check("http://hooks.example.com/").port == 80)
    }

    @Test func allowingPrivateAddressesLetsLocalReceiversThrough() throws {
        for url in ["http://127.0.0.1:9/hook", "http://localhost:8080/", "http://[::1]:9/", "http://2130706433/", "http://intranet/"] {
            #expect(throws: Never.self) { try WebhookURLPolicy.local.check(url) }
        }
        try WebhookURLPolicy.local.checkAddress(IPAddress(host: "10.0.0.1")!, of: "partner.test")
    }

    @Test func judgesResolvedAddressesLikeLiterals() {
        #expect(throws: WebhookURLProblem.self) {
            try WebhookURLPolicy.strict.checkAddress(IPAddress(host: "127.0.0.1")!, of: "rebound.example.com")
        }
        #expect(throws: Never.self) { try WebhookURLPolicy.strict.checkAddress(IPAddress(host: "93.184.215.14")!, of: "example.com") }
    }

    @Test func readsEveryNumericIPv4Form() {
        let loopback = IPAddress.v4(0x7F00_0001)
        let forms = [
            "127.0.0.1", "2130706433", "0x7f000001", "0X7F000001", "017700000001", "0177.0.0.1", "127.1", "127.0.1", "0x7f.1",
            "127.0.0.1.",
        ]
        for form in forms {
            #expect(IPAddress(host: form) == loopback, "\(form)")
        }
        for notAnAddress in ["127.0.0.256", "1.2.3.4.5", "4294967296", "08", "example.com", "0x", "1..2"] {
            #expect(IPAddress(host: notAnAddress) != loopback, "\(notAnAddress)")
        }
        #expect(IPAddress(host: "4294967296") == nil)
        #expect(IPAddress(host: "1.2.3.4.5") == nil)
        #expect(IPAddress(host: "[::ffff:127.0.0.1]")?.description == "::ffff:127.0.0.1")
    }
}
