import ArgumentParser
import CommandSupport
import Foundation
import Ingest
import Kafka
import Persistence
import Shared

/// What `checkin devices` and `checkin events` ask: a device's state, decision records and
/// erasure, and the event log.
protocol DevicesBackend: Sendable {
    /// What is kept about the device; refused, naming it, when nothing is.
    func view(device: String) async throws -> DeviceView
    func decisions(device: String, cursor: Int64?, limit: Int) async throws -> PageAnswer<DecisionRecord>
    func erase(device: String) async throws -> DeviceErasure
    func events(_ filter: EventFilter, cursor: Int64?, limit: Int) async throws -> PageAnswer<LoggedEvent>
}

func devicesBackend(project: String, of command: any ParsableCommand.Type) throws -> any DevicesBackend {
    try Backend.select(
        project: project, remote: { RemoteDevices(api: $0) }, direct: { DirectDevices(project: project, command: command) })
}

struct RemoteDevices: DevicesBackend {
    let api: ManagementAPI

    func view(device: String) async throws -> DeviceView { try await api.device(device) }
    func decisions(device: String, cursor: Int64?, limit: Int) async throws -> PageAnswer<DecisionRecord> {
        try await api.decisions(of: device, cursor: cursor, limit: limit)
    }
    func erase(device: String) async throws -> DeviceErasure { try await api.eraseDevice(device) }
    func events(_ filter: EventFilter, cursor: Int64?, limit: Int) async throws -> PageAnswer<LoggedEvent> {
        try await api.events(filter, cursor: cursor, limit: limit)
    }
}

struct DirectDevices: DevicesBackend {
    let project: String
    let command: any ParsableCommand.Type

    func view(device: String) async throws -> DeviceView {
        let project = project
        guard
            let view = try await withDeviceInsight(
                project: project, of: command, { try await $0.view(projectId: project, deviceId: device) })
        else {
            throw CommandFailure("nothing is kept about device \(device) in project \(project)", helpOf: command)
        }
        return view
    }

    func decisions(device: String, cursor: Int64?, limit: Int) async throws -> PageAnswer<DecisionRecord> {
        let project = project
        return PageAnswer(
            try await withDeviceInsight(project: project, of: command) {
                try await $0.decisions(projectId: project, deviceId: device, cursor: cursor, limit: limit)
            })
    }

    func erase(device: String) async throws -> DeviceErasure {
        let (project, command) = (project, command)
        let settings = try ProcessSettings()
        return try await withDatabase { database, logger in
            try await requireProject(project, of: command, database: database, logger: logger)
            let producer = try KafkaProducer(configuration: settings.producerConfiguration(clientId: "checkin-erase"), logger: logger)
            return try await withThrowingTaskGroup(of: DeviceErasure?.self) { tasks in
                tasks.addTask {
                    try await producer.run()
                    return nil
                }
                let erasure = try await DeviceEraser(
                    database: database, producer: producer, fixesTopic: settings.topics.fixes, logger: logger
                ).erase(projectId: project, deviceId: device, by: "checkin devices erase", logger: logger)
                tasks.cancelAll()
                return erasure
            }
        }
    }

    func events(_ filter: EventFilter, cursor: Int64?, limit: Int) async throws -> PageAnswer<LoggedEvent> {
        let project = project
        return PageAnswer(
            try await withDeviceInsight(project: project, of: command) {
                try await $0.events(projectId: project, filter: filter, cursor: cursor, limit: limit)
            })
    }
}
