import Testing

/// `#expect { body } throws: { matches }`, as a function: Swift 6.0.3 (Debian trixie's) crashes
/// type-checking that macro around a call with typed throws. Records an issue when `body` throws
/// nothing, or an error that `matches` refuses.
public func expectError<Result>(_ body: () throws -> Result, sourceLocation: SourceLocation = #_sourceLocation, _ matches: (any Error) -> Bool) {
    do {
        _ = try body()
        Issue.record("expected an error, none was thrown", sourceLocation: sourceLocation)
    } catch {
        #expect(matches(error), "unexpected error: \(error)", sourceLocation: sourceLocation)
    }
}

/// The error of type `E` that `body` throws, as Swift 6.1's `#expect(throws:)` returns it (6.0's
/// returns nothing); records an issue when `body` throws none, or another.
public func expectError<E: Error, Result>(_ type: E.Type, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Result) -> E? {
    do {
        _ = try body()
        Issue.record("expected \(E.self), none was thrown", sourceLocation: sourceLocation)
    } catch let error as E {
        return error
    } catch {
        Issue.record("expected \(E.self), got \(error)", sourceLocation: sourceLocation)
    }
    return nil
}
