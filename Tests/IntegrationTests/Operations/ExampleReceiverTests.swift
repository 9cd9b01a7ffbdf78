import AsyncHTTPClient
import Foundation
import NIOCore
import Shared
import Testing

/// The example partner endpoint a partner may copy checks what Standard Webhooks asks of a
/// receiver: the signature, and a timestamp recent enough that a recorded webhook cannot be
/// played again later.
@Suite struct ExampleReceiverTests {
    @Test func aSignedWebhookIsTakenOnlyWhileItsTimestampIsRecent() async throws {
        let secretText = WebhookSecret.generate()
        let secret = try WebhookSecret(secretText)
        let port = try freePort()
        let receiver = Process()
        receiver.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        receiver.arguments = [
            PrivatePostgres.repositoryRoot.appendingPathComponent("examples/webhook-receiver.py").path, "--port", String(port),
            "--secret", secretText,
        ]
        receiver.standardOutput = FileHandle.nullDevice
        receiver.standardError = FileHandle.nullDevice
        try receiver.run()
        defer { receiver.stopAtOnce() }

        let body = #"{"type":"checkin","timestamp":"2026-12-07T00:00:00Z","data":{}}"#
        func send(sentAgo seconds: Int, signed: Bool = true) async throws -> UInt {
            let timestamp = Int(Date().timeIntervalSince1970) - seconds
            var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/")
            request.method = .POST
            request.headers.add(name: "webhook-id", value: "msg_example")
            request.headers.add(name: "webhook-timestamp", value: String(timestamp))
            let signature = WebhookSignature.header(id: "msg_example", timestamp: timestamp, body: Data(body.utf8), secrets: [secret])
            request.headers.add(name: "webhook-signature", value: signed ? signature : "v1,bm90IGl0")
            request.body = .bytes(ByteBuffer(string: body))
            return try await HTTPClient.shared.execute(request, timeout: .seconds(5)).status.code
        }
        // The receiver takes a moment to listen.
        var fresh: UInt = 0
        for _ in 0..<50 {
            if let status = try? await send(sentAgo: 0) {
                fresh = status
                break
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(fresh == 204)
        #expect(try await send(sentAgo: 3600) == 401, "a webhook signed an hour ago is played again")
        #expect(try await send(sentAgo: -3600) == 401, "a webhook dated an hour ahead")
        #expect(try await send(sentAgo: 0, signed: false) == 401)
    }
}
