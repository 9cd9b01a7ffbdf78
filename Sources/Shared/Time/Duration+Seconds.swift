extension Duration {
    /// The duration in seconds as a floating-point number: for SQL intervals, rates and
    /// figures, where `components` would be spelled out again at every use.
    public var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
