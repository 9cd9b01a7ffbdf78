import Foundation
import Geofence
import Hummingbird
import Logging
import Persistence
import ServiceSupport
import Shared

extension ManagementRoutes {
    /// A project's zones are one document, replaced whole; every accepted document is kept as a
    /// numbered version, which `ETag` names and `If-Match` guards.
    func addZoneRoutes(to router: RouterGroup<IngestRequestContext>) {
        router.get("/v1/zones") { request, context in
            let projectId = try await keys.project(for: request, context: context, kind: .management)
            try Self.refuseUnknownParameters(of: request, known: [])
            let current = try await dependencies.zones.currentZones(projectId: projectId)
            return try json(current.document, headers: Self.entityTag(current.version))
        }
        router.put("/v1/zones") { request, context in try await replaceZones(request, context: context) }
        router.get("/v1/zones/versions") { request, context in
            let projectId = try await keys.project(for: request, context: context, kind: .management)
            try Self.refuseUnknownParameters(of: request, known: ["limit", "cursor"])
            let query = request.uri.queryParameters
            let page = try await dependencies.zones.versions(
                projectId: projectId, before: try Self.cursor(query.get("cursor")),
                limit: try Self.limit(query.get("limit"), default: 100, within: 1...1000))
            return try json(PageAnswer(page))
        }
        router.get("/v1/zones/versions/:version") { request, context in
            let projectId = try await keys.project(for: request, context: context, kind: .management)
            try Self.refuseUnknownParameters(of: request, known: [])
            let version = try Self.versionNumber(context)
            guard let document = try await dependencies.zones.document(projectId: projectId, version: version) else {
                throw Problem.notFound("this project has no zones version \(version)")
            }
            return try json(document, headers: Self.entityTag(version))
        }
        router.post("/v1/zones/versions/:version/restore") { request, context in
            try await restoreZones(request, context: context)
        }
    }

    /// `PUT /v1/zones`: validates the document and replaces the project's zones with it, or,
    /// with `dryRun=true`, answers what the replacement would change.
    func replaceZones(_ request: Request, context: IngestRequestContext) async throws -> Response {
        let key = try await keys.match(for: request, context: context, kind: .management)
        let projectId = key.projectId
        try Self.refuseUnknownParameters(of: request, known: ["dryRun", "message"])
        let dryRun = try Self.dryRun(request.uri.queryParameters.get("dryRun"))
        let message = try Self.versionMessage(request.uri.queryParameters.get("message"))
        let expectedVersion = try Self.expectedVersion(request)
        let body = try await request.body.collect(upTo: maximumBodyBytes)
        let document = try Self.decodeBody(
            ZonesDocument.self, from: body, shape: "the body is not a zones document", decoder: WireJSON.decoder())
        let unknownMembers = try ZonesDocument.unknownMembers(of: document, in: Data(buffer: body))
        try refuseInvalid(document, unknownMembers: unknownMembers)
        if dryRun {
            return try await previewReplacement(projectId: projectId, with: document, expectedVersion: expectedVersion)
        }
        return try await replace(
            projectId: projectId, with: document, expectedVersion: expectedVersion, author: key.keyId, message: message)
    }

    /// The `message` a replacement keeps with its version, or a 400 naming it.
    static func versionMessage(_ text: String?) throws -> String? {
        guard let text else { return nil }
        if let problem = ZonesVersionMessage.problem(with: text) {
            throw Problem.invalid("the version's message cannot be kept", parameters: [.init(name: "message", reason: problem)])
        }
        return text.isEmpty ? nil : text
    }

    /// `POST /v1/zones/versions/{version}/restore`: the version's document becomes the project's
    /// zones again, as a new version (history is never rewritten), under the same rules as a
    /// `PUT`: the validator and quota of today, the replace interval and `If-Match`.
    func restoreZones(_ request: Request, context: IngestRequestContext) async throws -> Response {
        let key = try await keys.match(for: request, context: context, kind: .management)
        let projectId = key.projectId
        try Self.refuseUnknownParameters(of: request, known: ["message"])
        let version = try Self.versionNumber(context)
        let expectedVersion = try Self.expectedVersion(request)
        let message = try Self.versionMessage(request.uri.queryParameters.get("message"))
        guard let document = try await dependencies.zones.document(projectId: projectId, version: version) else {
            throw Problem.notFound("this project has no zones version \(version)")
        }
        try refuseInvalid(document, unknownMembers: [])
        return try await replace(
            projectId: projectId, with: document, expectedVersion: expectedVersion, restoring: version, author: key.keyId,
            message: message)
    }

    /// A 400 naming every problem the validator finds (and every member no field reads), or a
    /// 413 for a document beyond the project's quota.
    func refuseInvalid(_ document: ZonesDocument, unknownMembers: [String]) throws {
        let problems = ZoneValidator.validate(document)
        guard problems.isEmpty, unknownMembers.isEmpty else {
            throw Problem.invalid(
                "\(problems.count + unknownMembers.count) problem(s) in the zones; nothing was changed",
                parameters: unknownMembers.map { .init(name: $0, reason: "is not a member of a zones document") }
                    + problems.map { problem in
                        .init(
                            name: "zones[\(problem.zoneId)]" + (problem.fenceId.map { ".fences[\($0)]" } ?? "")
                                + (problem.beaconId.map { ".beacons[\($0)]" } ?? ""),
                            reason: problem.problem)
                    })
        }
        let excess = configuration.zoneQuota.excess(of: document)
        guard excess.isEmpty else { throw Problem.zoneQuotaExceeded(excess) }
    }

    /// Replaces the project's zones with a validated document and answers the new version.
    func replace(
        projectId: String, with document: ZonesDocument, expectedVersion: Int64?, restoring restoredVersion: Int64? = nil,
        author: String, message: String?
    ) async throws -> Response {
        let minimumInterval = configuration.zoneQuota.minimumReplaceInterval
        let version: Int64
        do {
            version = try await dependencies.zones.replaceZones(
                projectId: projectId, with: document, minimumInterval: minimumInterval, expectedVersion: expectedVersion,
                author: author, message: message)
        } catch let tooSoon as ZonesReplacedTooSoon {
            throw Problem.zonesReplacedTooSoon(retryAfter: tooSoon.retryAfter, minimumInterval: minimumInterval)
        } catch let mismatch as ZonesVersionMismatch {
            throw Problem.zonesVersionMismatch(expected: expectedVersion ?? 0, current: mismatch.currentVersion)
        }
        let lint = Self.lint(document)
        var metadata: Logger.Metadata = [
            "projectId": "\(projectId)", "zones": "\(document.zones.count)", "version": "\(version)", "lintWarnings": "\(lint.total)",
        ]
        if let restoredVersion { metadata["restoredVersion"] = "\(restoredVersion)" }
        logger.info(restoredVersion == nil ? "zones replaced" : "zones restored", metadata: metadata)
        return try json(
            ZonesReplaced(zones: document.zones.count, version: version, warnings: lint.warnings, warningCount: lint.total),
            headers: Self.entityTag(version))
    }

    /// What replacing the project's zones with a validated document would change; applies
    /// nothing, stores no version, and is not held to the replace interval (a dry run is not a
    /// replacement). `ETag` is the version the changes are counted from.
    func previewReplacement(projectId: String, with document: ZonesDocument, expectedVersion: Int64?) async throws -> Response {
        let current = try await dependencies.zones.currentZones(projectId: projectId)
        if let expectedVersion, expectedVersion != current.version {
            throw Problem.zonesVersionMismatch(expected: expectedVersion, current: current.version)
        }
        let changes = try document.changes(from: current.document)
        let lint = Self.lint(document)
        return try json(
            ZonesDryRun(changes: changes, warnings: lint.warnings, warningCount: lint.total),
            headers: Self.entityTag(current.version))
    }

    /// Warnings, not refusals: the zones are stored whatever the lint finds (docs/evaluation-rules.md#fence-lint).
    static func lint(_ document: ZonesDocument) -> FenceLintReport {
        (try? FenceLint.check(document)) ?? FenceLintReport(warnings: [], total: 0)
    }

    /// `ETag` for a version of the project's zones: its number, quoted.
    static func entityTag(_ version: Int64) -> HTTPFields {
        [.eTag: "\"\(version)\""]
    }

    /// The version `If-Match` names (`"3"` or `3`); nil without `If-Match` or for `*`, which
    /// matches any version.
    static func expectedVersion(_ request: Request) throws -> Int64? {
        guard let text = request.headers[.ifMatch]?.trimmingCharacters(in: .whitespaces), text != "*" else { return nil }
        let unquoted = text.count >= 2 && text.hasPrefix("\"") && text.hasSuffix("\"") ? String(text.dropFirst().dropLast()) : text
        // Digits alone, as the document's pattern says: `Int64` would also take "+04".
        guard (1...18).contains(unquoted.count), unquoted.allSatisfy({ $0.isASCII && $0.isNumber }),
            let version = Int64(unquoted)
        else {
            throw Problem.invalid(
                "If-Match is not a version of the zones",
                parameters: [.init(name: "If-Match", reason: "must be a version of the zones, such as \"3\", or *")])
        }
        return version
    }

    /// The `dryRun` query parameter: absent is false; anything but `true` or `false` is a 400.
    static func dryRun(_ text: String?) throws -> Bool {
        switch text {
        case nil, "false": return false
        case "true": return true
        default: throw Problem.invalid("dryRun is not a boolean", parameters: [.init(name: "dryRun", reason: "must be true or false")])
        }
    }

    /// The `{version}` of a zones version path: a 400 when it is not a number (a number the
    /// project has no version of is the route's 404).
    static func versionNumber(_ context: IngestRequestContext) throws -> Int64 {
        let text = try context.parameters.decoded("version")
        guard let version = Int64(text) else {
            throw Problem.invalid(
                "the version is not a number", parameters: [.init(name: "version", reason: "must be a version number, such as 3")])
        }
        return version
    }
}
