import AsyncHTTPClient
import Foundation
import NIOSSL
import Notifier
import Shared
import Testing

/// TLS when connecting to a pinned address: the certificate is still checked for the
/// URL's host name. The partner is `openssl s_server` with a certificate for
/// partner.example.com, made for the test.
@Suite(.serialized) struct GuardedWebhookTLSTests {
    func openssl(_ arguments: [String], in directory: URL) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = arguments
        process.currentDirectoryURL = directory
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        return process
    }

    @Test func certificatesAreVerifiedForTheHostNameNotTheAddress() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("checkin-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let made = try openssl(
            [
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "key.pem", "-out", "cert.pem", "-days", "1",
                "-subj", "/CN=partner.example.com", "-addext", "subjectAltName=DNS:partner.example.com",
            ], in: directory)
        made.waitUntilExit()
        #expect(made.terminationStatus == 0)
        let port = try freePort()
        // `-www` answers a GET with a status page over TLS.
        let server = try openssl(
            ["s_server", "-accept", "127.0.0.1:\(port)", "-cert", "cert.pem", "-key", "key.pem", "-www", "-quiet"], in: directory)
        defer { server.stopAtOnce() }

        var trusting = TLSConfiguration.makeClientConfiguration()
        trusting.trustRoots = .file(directory.appendingPathComponent("cert.pem").path)
        let resolver = FixedResolver(answers: ["partner.example.com": ["127.0.0.1"], "other.example.com": ["127.0.0.1"]])
        let client = try GuardedWebhookClient(policy: .local, resolver: resolver, tlsConfiguration: trusting)

        var answered: HTTPClientResponse?
        let deadline = ContinuousClock.now + .seconds(20)
        while answered == nil && ContinuousClock.now < deadline {
            answered = try? await client.execute(HTTPClientRequest(url: "https://partner.example.com:\(port)/"), timeout: .seconds(10))
            if answered == nil { try await Task.sleep(for: .milliseconds(200)) }
        }
        #expect(answered?.status == .ok, "the certificate for partner.example.com was not accepted at the pinned address")

        // The same server and address under another name: the certificate does not match it.
        await #expect(throws: (any Error).self) {
            try await client.execute(HTTPClientRequest(url: "https://other.example.com:\(port)/"), timeout: .seconds(10))
        }
        // The system's trust roots do not know the test certificate.
        let systemTrust = try GuardedWebhookClient(policy: .local, resolver: resolver)
        await #expect(throws: (any Error).self) {
            try await systemTrust.execute(HTTPClientRequest(url: "https://partner.example.com:\(port)/"), timeout: .seconds(10))
        }
    }
}
