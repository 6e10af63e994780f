import CENDBus

/// A D-Bus message: a method call, a reply, an error or a signal, with its arguments.
/// Sendable by hand: immutable once built, and libdbus messages may be read from any thread
/// (their reference count is atomic).
public final class DBusMessage: @unchecked Sendable {
    let raw: OpaquePointer

    public enum Kind: Sendable { case methodCall, methodReturn, error, signal, other }

    /// Takes over a reference the caller owns.
    init(owning raw: OpaquePointer) { self.raw = raw }

    /// Takes a new reference to a message libdbus lends.
    init(borrowing raw: OpaquePointer) {
        dbus_message_ref(raw)
        self.raw = raw
    }

    deinit { dbus_message_unref(raw) }

    public static func methodCall(destination: String?, path: String, interface: String?, member: String, _ arguments: [DBusValue] = []) throws(DBusError) -> DBusMessage {
        guard let raw = dbus_message_new_method_call(destination, path, interface, member) else {
            throw DBusError(name: DBusError.invalidArgs, message: "cannot make a call to \(member) on \(path)")
        }
        let message = DBusMessage(owning: raw)
        try message.append(arguments)
        return message
    }

    /// A signal; with a `destination`, the bus delivers it to that connection only.
    public static func signal(path: String, interface: String, member: String, destination: String? = nil,
                              _ arguments: [DBusValue] = []) throws(DBusError) -> DBusMessage {
        guard let raw = dbus_message_new_signal(path, interface, member) else {
            throw DBusError(name: DBusError.invalidArgs, message: "cannot make the signal \(interface).\(member) on \(path)")
        }
        let message = DBusMessage(owning: raw)
        if let destination, dbus_message_set_destination(raw, destination) == 0 {
            throw DBusError(name: DBusError.failed, message: "cannot address the signal \(interface).\(member) to \(destination)")
        }
        try message.append(arguments)
        return message
    }

    /// The reply to this method call.
    public func methodReturn(_ arguments: [DBusValue] = []) throws(DBusError) -> DBusMessage {
        let message = DBusMessage(owning: dbus_message_new_method_return(raw))
        try message.append(arguments)
        return message
    }

    /// An error reply to this method call.
    public func errorReply(_ error: DBusError) -> DBusMessage {
        DBusMessage(owning: dbus_message_new_error(raw, error.name, error.message))
    }

    public var kind: Kind {
        switch dbus_message_get_type(raw) {
        case CENDBUS_MESSAGE_TYPE_METHOD_CALL: return .methodCall
        case CENDBUS_MESSAGE_TYPE_METHOD_RETURN: return .methodReturn
        case CENDBUS_MESSAGE_TYPE_ERROR: return .error
        case CENDBUS_MESSAGE_TYPE_SIGNAL: return .signal
        default: return .other
        }
    }

    public var path: String? { dbus_message_get_path(raw).map { String(cString: $0) } }
    public var interface: String? { dbus_message_get_interface(raw).map { String(cString: $0) } }
    public var member: String? { dbus_message_get_member(raw).map { String(cString: $0) } }
    /// False for a call marked as wanting no reply (a reply would only be thrown away by the bus).
    public var expectsReply: Bool { dbus_message_get_no_reply(raw) == 0 }
    public var sender: String? { dbus_message_get_sender(raw).map { String(cString: $0) } }
    public var destination: String? { dbus_message_get_destination(raw).map { String(cString: $0) } }
    public var errorName: String? { dbus_message_get_error_name(raw).map { String(cString: $0) } }
    public var signature: String { String(cString: dbus_message_get_signature(raw)) }

    /// The arguments, decoded.
    public var arguments: [DBusValue] {
        var iterator = DBusMessageIter()
        guard dbus_message_iter_init(raw, &iterator) != 0 else { return [] }
        return Self.readAll(&iterator)
    }

    /// This error reply as a Swift error (nil for other messages).
    public var error: DBusError? {
        guard kind == .error else { return nil }
        return DBusError(name: errorName ?? DBusError.failed, message: arguments.first?.string ?? "")
    }

    // MARK: Encoding

    private func append(_ arguments: [DBusValue]) throws(DBusError) {
        var iterator = DBusMessageIter()
        dbus_message_iter_init_append(raw, &iterator)
        for argument in arguments { try Self.append(argument, to: &iterator) }
    }

    private static func append(_ value: DBusValue, to iterator: inout DBusMessageIter) throws(DBusError) {
        var appended = true
        switch value {
        case .byte(let value): appended = basic(CENDBUS_TYPE_BYTE, value, &iterator)
        case .boolean(let value): appended = basic(CENDBUS_TYPE_BOOLEAN, dbus_bool_t(value ? 1 : 0), &iterator)
        case .int16(let value): appended = basic(CENDBUS_TYPE_INT16, value, &iterator)
        case .uint16(let value): appended = basic(CENDBUS_TYPE_UINT16, value, &iterator)
        case .int32(let value): appended = basic(CENDBUS_TYPE_INT32, value, &iterator)
        case .uint32(let value): appended = basic(CENDBUS_TYPE_UINT32, value, &iterator)
        case .int64(let value): appended = basic(CENDBUS_TYPE_INT64, value, &iterator)
        case .uint64(let value): appended = basic(CENDBUS_TYPE_UINT64, value, &iterator)
        case .double(let value): appended = basic(CENDBUS_TYPE_DOUBLE, value, &iterator)
        case .unixFD(let value): appended = basic(CENDBUS_TYPE_UNIX_FD, value, &iterator)
        case .string(let text), .objectPath(let text), .signature(let text):
            let type = value.signature.utf8.first.map(Int32.init)!
            guard validText(text, type: type) else {
                throw DBusError(name: DBusError.invalidArgs, message: "\"\(text)\" is not a valid \(value.signature) value")
            }
            appended = text.withCString { pointer in
                var pointer: UnsafePointer<CChar>? = pointer
                return dbus_message_iter_append_basic(&iterator, type, &pointer) != 0
            }
        case .array(let element, let values):
            guard values.allSatisfy({ $0.signature == element }) else {
                throw DBusError(name: DBusError.invalidArgs, message: "an array of \(element) holds another type")
            }
            try container(CENDBUS_TYPE_ARRAY, element, &iterator) { (sub) throws(DBusError) in
                for value in values { try append(value, to: &sub) }
            }
        case .dictionary(let key, let valueSignature, let entries):
            try container(CENDBUS_TYPE_ARRAY, "{" + key + valueSignature + "}", &iterator) { (sub) throws(DBusError) in
                for entry in entries {
                    guard entry.key.signature == key, entry.value.signature == valueSignature else {
                        throw DBusError(name: DBusError.invalidArgs, message: "a dictionary entry is not {\(key)\(valueSignature)}")
                    }
                    try container(CENDBUS_TYPE_DICT_ENTRY, nil, &sub) { (pair) throws(DBusError) in
                        try append(entry.key, to: &pair)
                        try append(entry.value, to: &pair)
                    }
                }
            }
        case .structure(let fields):
            try container(CENDBUS_TYPE_STRUCT, nil, &iterator) { (sub) throws(DBusError) in
                for field in fields { try append(field, to: &sub) }
            }
        case .variant(let inner):
            try container(CENDBUS_TYPE_VARIANT, inner.signature, &iterator) { (sub) throws(DBusError) in
                try append(inner, to: &sub)
            }
        }
        guard appended else { throw DBusError(name: DBusError.failed, message: "out of memory appending \(value.signature)") }
    }

    private static func basic<T>(_ type: Int32, _ value: T, _ iterator: inout DBusMessageIter) -> Bool {
        var value = value
        return withUnsafeMutablePointer(to: &value) { dbus_message_iter_append_basic(&iterator, type, $0) } != 0
    }

    private static func container(_ type: Int32, _ signature: String?, _ iterator: inout DBusMessageIter,
                                  _ body: (inout DBusMessageIter) throws(DBusError) -> Void) throws(DBusError) {
        var sub = DBusMessageIter()
        guard dbus_message_iter_open_container(&iterator, type, signature, &sub) != 0 else {
            throw DBusError(name: DBusError.invalidArgs, message: "cannot open a container of signature \(signature ?? "?")")
        }
        do {
            try body(&sub)
        } catch {
            dbus_message_iter_abandon_container(&iterator, &sub)
            throw error
        }
        guard dbus_message_iter_close_container(&iterator, &sub) != 0 else {
            throw DBusError(name: DBusError.failed, message: "out of memory closing a container")
        }
    }

    /// libdbus aborts the process on invalid strings, paths and signatures: check them first.
    private static func validText(_ text: String, type: Int32) -> Bool {
        text.withCString { pointer in
            switch type {
            case CENDBUS_TYPE_OBJECT_PATH: return dbus_validate_path(pointer, nil) != 0
            case CENDBUS_TYPE_SIGNATURE: return dbus_signature_validate(pointer, nil) != 0
            default: return dbus_validate_utf8(pointer, nil) != 0
            }
        }
    }

    // MARK: Decoding

    private static func readAll(_ iterator: inout DBusMessageIter) -> [DBusValue] {
        var values = [DBusValue]()
        while dbus_message_iter_get_arg_type(&iterator) != CENDBUS_TYPE_INVALID {
            values.append(read(&iterator))
            dbus_message_iter_next(&iterator)
        }
        return values
    }

    private static func read(_ iterator: inout DBusMessageIter) -> DBusValue {
        let type = dbus_message_iter_get_arg_type(&iterator)
        switch type {
        case CENDBUS_TYPE_BYTE: return .byte(basic(&iterator, as: UInt8.self))
        case CENDBUS_TYPE_BOOLEAN: return .boolean(basic(&iterator, as: dbus_bool_t.self) != 0)
        case CENDBUS_TYPE_INT16: return .int16(basic(&iterator, as: Int16.self))
        case CENDBUS_TYPE_UINT16: return .uint16(basic(&iterator, as: UInt16.self))
        case CENDBUS_TYPE_INT32: return .int32(basic(&iterator, as: Int32.self))
        case CENDBUS_TYPE_UINT32: return .uint32(basic(&iterator, as: UInt32.self))
        case CENDBUS_TYPE_INT64: return .int64(basic(&iterator, as: Int64.self))
        case CENDBUS_TYPE_UINT64: return .uint64(basic(&iterator, as: UInt64.self))
        case CENDBUS_TYPE_DOUBLE: return .double(basic(&iterator, as: Double.self))
        case CENDBUS_TYPE_UNIX_FD: return .unixFD(basic(&iterator, as: Int32.self))
        case CENDBUS_TYPE_STRING: return .string(text(&iterator))
        case CENDBUS_TYPE_OBJECT_PATH: return .objectPath(text(&iterator))
        case CENDBUS_TYPE_SIGNATURE: return .signature(text(&iterator))
        case CENDBUS_TYPE_VARIANT:
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(&iterator, &sub)
            return .variant(read(&sub))
        case CENDBUS_TYPE_STRUCT:
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(&iterator, &sub)
            return .structure(readAll(&sub))
        case CENDBUS_TYPE_ARRAY:
            let signature = String((dbus_message_iter_get_signature(&iterator).map { pointer in
                defer { dbus_free(pointer) }
                return String(cString: pointer)
            } ?? "").dropFirst())
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(&iterator, &sub)
            if dbus_message_iter_get_element_type(&iterator) == CENDBUS_TYPE_DICT_ENTRY {
                let inner = signature.dropFirst().dropLast()  // "{kv}" → "kv"
                let keySignature = String(inner.prefix(1))
                var entries = [DBusValue.DictionaryEntry]()
                while dbus_message_iter_get_arg_type(&sub) == CENDBUS_TYPE_DICT_ENTRY {
                    var pair = DBusMessageIter()
                    dbus_message_iter_recurse(&sub, &pair)
                    let fields = readAll(&pair)
                    entries.append(DBusValue.DictionaryEntry(fields[0], fields[1]))
                    dbus_message_iter_next(&sub)
                }
                return .dictionary(keySignature: keySignature, valueSignature: String(inner.dropFirst()), entries)
            }
            return .array(elementSignature: signature, readAll(&sub))
        default:
            return .structure([])
        }
    }

    private static func basic<T>(_ iterator: inout DBusMessageIter, as _: T.Type) -> T {
        var value = DBusBasicValue()
        dbus_message_iter_get_basic(&iterator, &value)
        return withUnsafeBytes(of: &value) { $0.load(as: T.self) }
    }

    private static func text(_ iterator: inout DBusMessageIter) -> String {
        var pointer: UnsafePointer<CChar>?
        dbus_message_iter_get_basic(&iterator, &pointer)
        return pointer.map { String(cString: $0) } ?? ""
    }
}
