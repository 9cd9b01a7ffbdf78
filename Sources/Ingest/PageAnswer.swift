import Persistence
import Shared

/// What a list's items are called in its pages (`{"events": […], …}`).
package protocol PageItem: Codable, Sendable {
    static var pageKey: String { get }
}

/// A page of a list as the API (and the command line's `--json`) answers it: the items under
/// their list's name, and where the next (older) page starts, absent on the last one; `hasMore`
/// says the same for clients that test a flag.
package struct PageAnswer<Item: PageItem>: Codable, Sendable {
    package var items: [Item]
    package var nextCursor: String?
    package var hasMore: Bool { nextCursor != nil }

    package init(_ items: [Item], nextCursor: String?) {
        self.items = items
        self.nextCursor = nextCursor
    }

    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ name: String) { stringValue = name }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Key.self)
        items = try container.decode([Item].self, forKey: Key(Item.pageKey))
        nextCursor = try container.decodeIfPresent(String.self, forKey: Key("nextCursor"))
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        try container.encode(items, forKey: Key(Item.pageKey))
        try container.encodeIfPresent(nextCursor, forKey: Key("nextCursor"))
        try container.encode(hasMore, forKey: Key("hasMore"))
    }
}

extension PageAnswer where Item == LoggedEvent {
    package init(_ page: EventPage) { self.init(page.events, nextCursor: page.nextCursor.map(String.init)) }
}

extension PageAnswer where Item == DeliveryRecord {
    package init(_ page: DeliveryPage) { self.init(page.deliveries, nextCursor: page.nextCursor.map(String.init)) }
}

extension PageAnswer where Item == DecisionRecord {
    package init(_ page: DecisionPage) { self.init(page.records, nextCursor: page.nextCursor.map(String.init)) }
}

extension PageAnswer where Item == ZonesVersionSummary {
    package init(_ page: ZonesVersionPage) { self.init(page.versions, nextCursor: page.nextCursor.map(String.init)) }
}

extension PageAnswer where Item == ProjectRecord {
    package init(_ page: ProjectPage) { self.init(page.projects, nextCursor: page.nextCursor) }
}

extension LoggedEvent: PageItem { package static let pageKey = "events" }
extension DeliveryRecord: PageItem { package static let pageKey = "deliveries" }
extension DecisionRecord: PageItem { package static let pageKey = "decisions" }
extension ZonesVersionSummary: PageItem { package static let pageKey = "versions" }
extension ProjectRecord: PageItem { package static let pageKey = "projects" }
