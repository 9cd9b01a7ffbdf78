extension Migration {
    /// An endpoint's deliveries in the order its listing pages them (`GET /v1/deliveries?endpointId=`:
    /// newest id first, from a cursor), so that a page of one endpoint is a range of this index and
    /// reads what it returns. Without it the planner read the whole table (beside 20,000
    /// deliveries, 579 buffers for an endpoint's newest 50; with it, 6). Each queued delivery
    /// writes one more index entry. A device's page needs none: `deliveries_device_order` holds
    /// each device's deliveries per endpoint.
    static let deliveryListFilters = Migration(
        version: 40, name: "delivery list filters",
        sql: """
            CREATE INDEX deliveries_endpoint_id_order ON deliveries (endpoint_id, id);
            """)
}
