extension Migration {
    /// Room left in each page of `deliveries` for the versions its rows' updates write.
    ///
    /// Every update of a delivery (claimed, recorded, its successor let go) moves a column
    /// that an index names, so none is heap-only; but a new version written on the row's own
    /// page is logged without the bytes it shares with the old one (the payload among them),
    /// and the page's dead versions are pruned as it fills again. With full pages, most new
    /// versions went to another page. The rows take that much more room on disk; retention
    /// bounds how many there are.
    static let deliveryPageRoom = Migration(
        version: 25, name: "room in delivery pages for their updates",
        sql: """
            ALTER TABLE deliveries SET (fillfactor = 70);
            """)
}
