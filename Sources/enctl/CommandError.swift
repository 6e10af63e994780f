/// A failure with a message for the person: ArgumentParser prints it as "Error: <message>" on
/// stderr and exits with status 1.
struct CommandError: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) { self.description = description }
}
