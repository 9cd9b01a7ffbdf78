/// One statement of a migration read as words, enough to tell what it changes in the schema
/// that an older release uses: what it drops, renames or alters in place, and what it creates
/// (a later statement of the same migration may change that freely, since no older release
/// knows it).
///
/// Not a SQL parser: it knows the statements migrations are made of, and calls anything else
/// `unrecognised`, which the policy refuses, so that what it misreads fails loudly.
struct MigrationStatement {
    /// A change the policy refuses unless the migration declares it as a contraction.
    struct Finding: Hashable, Sendable {
        enum Kind: Hashable, Sendable {
            case drop(String)
            case rename
            case changeType
            case setNotNull
            case dropNotNull
            case dropDefault
            case requiredColumn
            case constraint
            case dropConstraint
            case uniqueIndex
            case truncate
            case deleteAll
            case updateAll
            case replace
            /// Postgres refuses it inside a transaction block, and the migrator runs each
            /// migration in one: no declaration makes it pass.
            case outsideTransaction
            case unrecognised
        }

        var kind: Kind
        /// What it changes: a table or index by name, a column or constraint as `table.name`.
        var subject: String

        /// Whether a declared contraction can let it through.
        var isContractible: Bool {
            switch kind {
            case .outsideTransaction, .unrecognised: false
            default: true
            }
        }

        var explanation: String {
            switch kind {
            case .drop(let what): "drops \(what) \(subject), which the previous release may still use"
            case .rename: "renames \(subject), which the previous release still uses by its old name"
            case .changeType: "changes the type of column \(subject) in place"
            case .setNotNull: "makes column \(subject) required, which the previous release's writers may leave out"
            case .dropNotNull: "lets column \(subject) be null, which the previous release's readers do not expect"
            case .dropDefault: "drops the default of column \(subject), on which the previous release's writers may rely"
            case .requiredColumn:
                "adds column \(subject) as NOT NULL without a DEFAULT, which the previous release's writers do not fill"
            case .constraint:
                "adds constraint \(subject), which existing rows or the previous release's writers may violate "
                    + "(a CHECK or FOREIGN KEY can be added NOT VALID and validated in a later release)"
            case .dropConstraint: "drops constraint \(subject), on which the previous release may rely"
            case .uniqueIndex:
                "adds unique index \(subject) to an existing table, which existing rows or the previous release's writers may violate"
            case .truncate: "empties table \(subject)"
            case .deleteAll: "deletes every row of \(subject)"
            case .updateAll: "updates every row of \(subject) (a backfill says which rows it fills with a WHERE)"
            case .replace: "replaces \(subject), which the previous release uses as it was"
            case .outsideTransaction:
                "cannot run inside a transaction, and the migrator applies each migration in one (\(subject))"
            case .unrecognised: "is not a statement the policy knows to be additive (\(subject))"
            }
        }
    }

    /// What statements earlier in the same migration created.
    struct Created {
        var tables: Set<String> = []
        var indexes: Set<String> = []
    }

    let tokens: [Token]

    init(_ sql: String) {
        tokens = Self.tokenize(sql)
    }

    /// The changes the policy refuses; records in `created` what the statement creates.
    func findings(created: inout Created) -> [Finding] {
        var cursor = Cursor(tokens: tokens)
        guard let command = cursor.keyword() else { return [] }
        switch command {
        case "create": return create(&cursor, created: &created)
        case "drop": return drop(&cursor, created: created)
        case "alter": return alter(&cursor, created: created)
        case "truncate":
            _ = cursor.take("table")
            _ = cursor.take("only")
            return cursor.names().map { Finding(kind: .truncate, subject: $0) }
        case "delete":
            _ = cursor.take("from")
            _ = cursor.take("only")
            let table = cursor.name() ?? "?"
            if created.tables.contains(table) || cursor.restContains("where") { return [] }
            return [Finding(kind: .deleteAll, subject: table)]
        case "update":
            _ = cursor.take("only")
            let table = cursor.name() ?? "?"
            if created.tables.contains(table) || cursor.restContains("where") { return [] }
            return [Finding(kind: .updateAll, subject: table)]
        case "insert", "select", "comment", "analyze":
            return []
        case "vacuum":
            return [Finding(kind: .outsideTransaction, subject: "VACUUM")]
        case "reindex" where cursor.restContains("concurrently"):
            return [Finding(kind: .outsideTransaction, subject: "REINDEX CONCURRENTLY")]
        default:
            return [Finding(kind: .unrecognised, subject: command.uppercased())]
        }
    }

    private func create(_ cursor: inout Cursor, created: inout Created) -> [Finding] {
        if cursor.take("or", "replace") {
            _ = cursor.keyword()
            return [Finding(kind: .replace, subject: cursor.name() ?? "?")]
        }
        while cursor.take("unlogged") || cursor.take("temporary") || cursor.take("temp") {}
        if cursor.take("table") {
            _ = cursor.take("if", "not", "exists")
            if let table = cursor.name() { created.tables.insert(table) }
            return []
        }
        let unique = cursor.take("unique")
        guard cursor.take("index") else { return [] }
        if cursor.take("concurrently") { return [Finding(kind: .outsideTransaction, subject: "CREATE INDEX CONCURRENTLY")] }
        _ = cursor.take("if", "not", "exists")
        let index = cursor.peek("on") ? nil : cursor.name()
        _ = cursor.take("on")
        _ = cursor.take("only")
        let table = cursor.name() ?? "?"
        if let index { created.indexes.insert(index) }
        guard unique, !created.tables.contains(table) else { return [] }
        return [Finding(kind: .uniqueIndex, subject: index ?? "on \(table)")]
    }

    private func drop(_ cursor: inout Cursor, created: Created) -> [Finding] {
        guard let kind = cursor.keyword() else { return [Finding(kind: .unrecognised, subject: "DROP")] }
        if kind == "index" && cursor.take("concurrently") {
            return [Finding(kind: .outsideTransaction, subject: "DROP INDEX CONCURRENTLY")]
        }
        if kind == "materialized" || kind == "foreign" { _ = cursor.keyword() }
        _ = cursor.take("if", "exists")
        return cursor.names().compactMap { name -> Finding? in
            switch kind {
            case "table" where created.tables.contains(name), "index" where created.indexes.contains(name): nil
            default: Finding(kind: .drop(kind), subject: name)
            }
        }
    }

    private func alter(_ cursor: inout Cursor, created: Created) -> [Finding] {
        guard let kind = cursor.keyword() else { return [Finding(kind: .unrecognised, subject: "ALTER")] }
        _ = cursor.take("if", "exists")
        _ = cursor.take("only")
        let name = cursor.name() ?? "?"
        switch kind {
        case "table":
            if created.tables.contains(name) { return [] }
            if cursor.take("rename") {
                if cursor.take("to") { return [Finding(kind: .rename, subject: name)] }
                _ = cursor.take("column") || cursor.take("constraint")
                return [Finding(kind: .rename, subject: "\(name).\(cursor.name() ?? "?")")]
            }
            return cursor.actions().flatMap { tableAction($0, table: name) }
        case "index":
            if created.indexes.contains(name) { return [] }
            if cursor.peek("rename") { return [Finding(kind: .rename, subject: name)] }
            if cursor.peek("set") || cursor.peek("reset") { return [] }
            return [Finding(kind: .unrecognised, subject: "ALTER INDEX")]
        default:
            if cursor.restContains("rename") { return [Finding(kind: .rename, subject: name)] }
            return [Finding(kind: .unrecognised, subject: "ALTER \(kind.uppercased())")]
        }
    }

    /// One action of `ALTER TABLE table action, action, …`.
    private func tableAction(_ action: Cursor, table: String) -> [Finding] {
        var cursor = action
        guard let verb = cursor.keyword() else { return [] }
        switch verb {
        case "add":
            if cursor.take("constraint") {
                let constraint = cursor.name() ?? "?"
                return addedConstraint(cursor, subject: "\(table).\(constraint)")
            }
            if ["check", "foreign", "unique", "primary", "exclude"].contains(where: { cursor.peek($0) }) {
                return addedConstraint(cursor, subject: "\(table) \(cursor.current?.text.uppercased() ?? "")")
            }
            _ = cursor.take("column")
            _ = cursor.take("if", "not", "exists")
            let column = cursor.name() ?? "?"
            let required = cursor.restContains("not", "null") || cursor.restContains("primary", "key")
            let filled =
                cursor.restContains("default") || cursor.restContains("generated")
                || ["serial", "bigserial", "smallserial"].contains { cursor.peek($0) }
            return required && !filled ? [Finding(kind: .requiredColumn, subject: "\(table).\(column)")] : []
        case "drop":
            if cursor.take("constraint") {
                _ = cursor.take("if", "exists")
                return [Finding(kind: .dropConstraint, subject: "\(table).\(cursor.name() ?? "?")")]
            }
            _ = cursor.take("column")
            _ = cursor.take("if", "exists")
            return [Finding(kind: .drop("column"), subject: "\(table).\(cursor.name() ?? "?")")]
        case "alter":
            _ = cursor.take("column")
            let column = "\(table).\(cursor.name() ?? "?")"
            if cursor.take("type") || cursor.take("set", "data", "type") { return [Finding(kind: .changeType, subject: column)] }
            if cursor.take("set", "not", "null") { return [Finding(kind: .setNotNull, subject: column)] }
            if cursor.take("drop", "not", "null") { return [Finding(kind: .dropNotNull, subject: column)] }
            if cursor.take("drop", "default") { return [Finding(kind: .dropDefault, subject: column)] }
            if cursor.peek("set") || cursor.peek("reset") { return [] }
            return [Finding(kind: .unrecognised, subject: "ALTER TABLE \(table) ALTER COLUMN")]
        case "set", "reset":
            // Storage parameters, `SET (fillfactor = 70)`; not SET LOGGED, TABLESPACE and the like.
            if cursor.current?.text == "(" { return [] }
            return [Finding(kind: .unrecognised, subject: "ALTER TABLE \(table) \(verb.uppercased())")]
        case "validate":
            return []
        default:
            return [Finding(kind: .unrecognised, subject: "ALTER TABLE \(table) \(verb.uppercased())")]
        }
    }

    private func addedConstraint(_ cursor: Cursor, subject: String) -> [Finding] {
        let validatedLater = (cursor.peek("check") || cursor.peek("foreign")) && cursor.restContains("not", "valid")
        return validatedLater ? [] : [Finding(kind: .constraint, subject: subject)]
    }
}

extension MigrationStatement {
    struct Token {
        /// A word as Postgres reads it (unquoted: lower case), a string literal, or one character.
        var text: String
        var isWord: Bool
        /// A double-quoted name: never a keyword.
        var isQuoted = false
        /// How many parentheses it is inside.
        var depth: Int
    }

    static func tokenize(_ sql: String) -> [Token] {
        var tokens: [Token] = []
        var depth = 0
        var characters = Array(sql)[...]
        while let character = characters.first {
            if character.isWhitespace {
                characters.removeFirst()
            } else if character == "-" && characters.dropFirst().first == "-" {
                characters = characters.drop(while: { $0 != "\n" })
            } else if character == "'" || character == "\"" {
                characters.removeFirst()
                let body = characters.prefix(while: { $0 != character })
                characters = characters.dropFirst(body.count + 1)
                tokens.append(
                    character == "'"
                        ? Token(text: "'\(String(body))'", isWord: false, depth: depth)
                        : Token(text: String(body), isWord: true, isQuoted: true, depth: depth))
            } else if character.isLetter || character.isNumber || character == "_" || character == "$" {
                let word = characters.prefix(while: { $0.isLetter || $0.isNumber || $0 == "_" || $0 == "$" })
                characters = characters.dropFirst(word.count)
                tokens.append(Token(text: String(word).lowercased(), isWord: true, depth: depth))
            } else {
                characters.removeFirst()
                if character == ")" { depth = max(0, depth - 1) }
                tokens.append(Token(text: String(character), isWord: false, depth: depth))
                if character == "(" { depth += 1 }
            }
        }
        return tokens
    }

    /// Reads the top level of a statement, or of one of its comma-separated parts.
    struct Cursor {
        var tokens: ArraySlice<Token>

        init(tokens: some Collection<Token>) {
            self.tokens = ArraySlice(tokens)
        }

        var current: Token? { tokens.first }

        func peek(_ keyword: String) -> Bool {
            guard let token = tokens.first else { return false }
            return token.isWord && !token.isQuoted && token.text == keyword
        }

        /// Consumes the keywords if they come next, in this order; otherwise consumes nothing.
        mutating func take(_ keywords: String...) -> Bool {
            var ahead = self
            for keyword in keywords {
                guard ahead.peek(keyword) else { return false }
                ahead.tokens.removeFirst()
            }
            self = ahead
            return true
        }

        mutating func keyword() -> String? {
            guard let token = tokens.first, token.isWord, !token.isQuoted else { return nil }
            tokens.removeFirst()
            return token.text
        }

        /// A name, without the schema that qualifies it.
        mutating func name() -> String? {
            guard let token = tokens.first, token.isWord else { return nil }
            tokens.removeFirst()
            var name = token.text
            while tokens.first?.text == ".", let next = tokens.dropFirst().first, next.isWord {
                tokens.removeFirst(2)
                name = next.text
            }
            return name
        }

        /// Comma-separated names, up to the first token that is neither.
        mutating func names() -> [String] {
            var names: [String] = []
            while let name = name() {
                names.append(name)
                guard tokens.first?.text == "," else { break }
                tokens.removeFirst()
            }
            return names.filter { !["cascade", "restrict"].contains($0) }
        }

        /// Whether the keywords occur in this order, together, at the top level of what is left.
        func restContains(_ keywords: String...) -> Bool {
            let depth = tokens.first?.depth ?? 0
            let words = tokens.map { $0.isWord && !$0.isQuoted && $0.depth == depth ? $0.text : "" }
            guard words.count >= keywords.count else { return false }
            return (0...(words.count - keywords.count)).contains { start in
                zip(words[start...], keywords).allSatisfy { $0 == $1 }
            }
        }

        /// What is left split at its top-level commas: the actions of an `ALTER TABLE`.
        func actions() -> [Cursor] {
            let depth = tokens.first?.depth ?? 0
            return tokens.split { $0.text == "," && !$0.isWord && $0.depth == depth }.map { Cursor(tokens: $0) }
        }
    }
}
