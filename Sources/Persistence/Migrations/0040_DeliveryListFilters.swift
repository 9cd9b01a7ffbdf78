extension Migration {
    /// A project's deliveries of one device, and an endpoint's deliveries, in the order their
    /// listing pages them (`GET /v1/deliveries?deviceId=` and `?endpointId=`: newest id first,
    /// from a cursor), so that a filtered page is a range of one of these indexes and reads what
    /// it returns. Without them the planner read the whole table for either page (beside 20,000
    /// deliveries, 579 buffers for an endpoint's newest 50 and 577 for a device's 41; with them,
    /// 6 and 43). Each queued delivery writes two more index entries.
    ///
    /// The device's index leads with the project, as a device id names a device of one project
    /// only; an endpoint is one project's already.
    static let deliveryListFilters = Migration(
        version: 40, name: "delivery list filters",
        sql: """
            CREATE INDEX deliveries_project_device ON deliveries (project_id, device_id, id);
            CREATE INDEX deliveries_endpoint_id_order ON deliveries (endpoint_id, id);
            """)
}
