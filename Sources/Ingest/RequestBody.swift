/// A management request's JSON body: the members it has are the only ones it may hold, so
/// that a misspelt one is named in a 400 rather than dropped (see `decodeBody`).
protocol RequestBody: Decodable {
    static var members: Set<String> { get }
}
