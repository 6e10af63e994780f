import Dispatch
import ENBus
import Glibc

/// A value that does not have the type the contract gives it: the daemon and the client disagree
/// (different versions) or a caller sent something else.
public struct ContractMismatch: Error, CustomStringConvertible, Equatable {
    public let description: String

    public init(_ description: String) { self.description = description }

    /// The same mismatch with where it was found in front: "GetExposureWindows reply: …".
    func within(_ context: String) -> ContractMismatch { ContractMismatch("\(context): \(description)") }
}

/// A Swift type with one D-Bus type: its signature, and conversion both ways that fails with a
/// `ContractMismatch` naming the types rather than answering a default.
public protocol DBusRepresentable: Sendable {
    static var dbusSignature: String { get }
    var dbusValue: DBusValue { get }
    init(dbusValue: DBusValue) throws(ContractMismatch)
}

extension DBusRepresentable {
    static func mismatch(_ value: DBusValue) -> ContractMismatch {
        ContractMismatch("expected \(dbusSignature), got \(value.signature)")
    }
}

/// A basic D-Bus type: its Swift value is the case's payload.
public protocol DBusScalar: DBusRepresentable {
    static func scalar(in value: DBusValue) -> Self?
}

extension DBusScalar {
    public init(dbusValue: DBusValue) throws(ContractMismatch) {
        guard let value = Self.scalar(in: dbusValue.unwrapped) else { throw Self.mismatch(dbusValue) }
        self = value
    }
}

extension Bool: DBusScalar {
    public static let dbusSignature = "b"
    public var dbusValue: DBusValue { .boolean(self) }
    public static func scalar(in value: DBusValue) -> Bool? { if case .boolean(let value) = value { value } else { nil } }
}

extension UInt8: DBusScalar {
    public static let dbusSignature = "y"
    public var dbusValue: DBusValue { .byte(self) }
    public static func scalar(in value: DBusValue) -> UInt8? { if case .byte(let value) = value { value } else { nil } }
}

extension Int32: DBusScalar {
    public static let dbusSignature = "i"
    public var dbusValue: DBusValue { .int32(self) }
    public static func scalar(in value: DBusValue) -> Int32? { if case .int32(let value) = value { value } else { nil } }
}

extension UInt32: DBusScalar {
    public static let dbusSignature = "u"
    public var dbusValue: DBusValue { .uint32(self) }
    public static func scalar(in value: DBusValue) -> UInt32? { if case .uint32(let value) = value { value } else { nil } }
}

extension UInt64: DBusScalar {
    public static let dbusSignature = "t"
    public var dbusValue: DBusValue { .uint64(self) }
    public static func scalar(in value: DBusValue) -> UInt64? { if case .uint64(let value) = value { value } else { nil } }
}

extension Double: DBusScalar {
    public static let dbusSignature = "d"
    public var dbusValue: DBusValue { .double(self) }
    public static func scalar(in value: DBusValue) -> Double? { if case .double(let value) = value { value } else { nil } }
}

extension String: DBusScalar {
    public static let dbusSignature = "s"
    public var dbusValue: DBusValue { .string(self) }
    public static func scalar(in value: DBusValue) -> String? { if case .string(let value) = value { value } else { nil } }
}

extension Array: DBusRepresentable where Element: DBusRepresentable {
    public static var dbusSignature: String { "a" + Element.dbusSignature }
    public var dbusValue: DBusValue { .array(elementSignature: Element.dbusSignature, map(\.dbusValue)) }
    public init(dbusValue: DBusValue) throws(ContractMismatch) {
        guard case .array(Element.dbusSignature, let values) = dbusValue.unwrapped else { throw Self.mismatch(dbusValue) }
        var elements = [Element]()
        elements.reserveCapacity(values.count)
        for (index, value) in values.enumerated() {
            do { elements.append(try Element(dbusValue: value)) } catch { throw error.within("element \(index)") }
        }
        self = elements
    }
}

/// A file descriptor passed over the bus (`h`). A received one is the receiver's to close.
public struct FileDescriptor: DBusScalar, Equatable {
    public static let dbusSignature = "h"
    public let rawValue: Int32

    public init(_ rawValue: Int32) { self.rawValue = rawValue }
    public var dbusValue: DBusValue { .unixFD(rawValue) }
    public static func scalar(in value: DBusValue) -> FileDescriptor? { if case .unixFD(let value) = value { FileDescriptor(value) } else { nil } }
}

/// A fixed list of named, typed members: a structure inside a reply, or the arguments of a method
/// or signal. `fields` lists them once, in the order they travel; the members' names and
/// signatures (introspection and error messages), the encoding and the decoding all follow from it.
public protocol DBusRecord: DBusRepresentable {
    static var fields: [DBusField<Self>] { get }
    /// A record that decoding then fills field by field.
    init()
}

extension DBusRecord {
    public static var members: [DBusArgument] { fields.map(\.member) }
    public static var dbusSignature: String { "(" + members.map(\.signature).joined() + ")" }
    public var values: [DBusValue] { Self.fields.map { $0.encode(self) } }
    public var dbusValue: DBusValue { .structure(values) }

    public init(dbusValue: DBusValue) throws(ContractMismatch) {
        guard case .structure(let fields) = dbusValue.unwrapped else { throw Self.mismatch(dbusValue) }
        try self.init(values: fields)
    }

    /// Reads a record from a message's arguments (or a structure's fields): exactly `members`.
    public init(values: [DBusValue]) throws(ContractMismatch) {
        let signature = values.map(\.signature).joined(), expected = Self.members.map(\.signature).joined()
        guard signature == expected else { throw ContractMismatch("expected (\(expected)), got (\(signature))") }
        var record = Self()
        for (field, value) in zip(Self.fields, values) { try field.decode(value, &record) }
        self = record
    }
}

/// One member of a record: its name on the bus and the property that holds it, with the
/// conversion between the two where the property's Swift type is not the one that travels.
public struct DBusField<Record>: Sendable {
    public let member: DBusArgument
    let encode: @Sendable (Record) -> DBusValue
    /// Sets the field of a record from a value, or names the member in the mismatch.
    let decode: @Sendable (DBusValue, inout Record) throws(ContractMismatch) -> Void

    /// A member that travels as its property's own type.
    public init<Value: DBusRepresentable>(_ name: String, _ property: WritableKeyPath<Record, Value> & Sendable) {
        self.init(name, property, as: DBusConversion(encode: { $0 }, decode: { value throws(ContractMismatch) in value }))
    }

    /// A member that travels as `Wire`, converted both ways by `conversion`.
    public init<Value, Wire>(_ name: String, _ property: WritableKeyPath<Record, Value> & Sendable, as conversion: DBusConversion<Value, Wire>) {
        member = DBusArgument(name, Wire.self)
        encode = { record in conversion.encode(record[keyPath: property]).dbusValue }
        decode = { value, record throws(ContractMismatch) in
            do throws(ContractMismatch) { record[keyPath: property] = try conversion.decode(try Wire(dbusValue: value)) } catch {
                throw error.within(name)
            }
        }
    }
}

/// How a property's Swift type travels as a D-Bus type: a fixed-width integer, -1 for unknown, …
public struct DBusConversion<Value, Wire: DBusRepresentable>: Sendable {
    let encode: @Sendable (Value) -> Wire
    let decode: @Sendable (Wire) throws(ContractMismatch) -> Value

    public init(encode: @escaping @Sendable (Value) -> Wire, decode: @escaping @Sendable (Wire) throws(ContractMismatch) -> Value) {
        self.encode = encode
        self.decode = decode
    }
}

extension DBusConversion where Value: BinaryInteger & Sendable, Wire: BinaryInteger {
    /// An integer that travels as `Wire`; a received value the Swift type cannot hold is a mismatch.
    public static func integer(_: Wire.Type) -> Self {
        Self(encode: { Wire($0) }, decode: { wire throws(ContractMismatch) in
            guard let value = Value(exactly: wire) else { throw ContractMismatch("\(wire) is out of range") }
            return value
        })
    }
}

extension DBusConversion where Value == Int?, Wire == Int32 {
    /// An unknown value travels as -1.
    public static var unknownAsMinusOne: Self {
        Self(encode: { Int32($0 ?? -1) }, decode: { wire throws(ContractMismatch) in wire < 0 ? nil : Int(wire) })
    }
}

extension DBusConversion {
    /// An array whose elements travel as `WireElement`.
    public static func integers<Element: BinaryInteger & Sendable, WireElement: BinaryInteger & DBusRepresentable>(_: WireElement.Type) -> Self
        where Value == [Element], Wire == [WireElement] {
        let element = DBusConversion<Element, WireElement>.integer(WireElement.self)
        return Self(encode: { $0.map(element.encode) }, decode: { wires throws(ContractMismatch) in
            var values = [Element]()
            for (index, wire) in wires.enumerated() {
                do throws(ContractMismatch) { values.append(try element.decode(wire)) } catch { throw error.within("element \(index)") }
            }
            return values
        })
    }
}

extension DBusArgument {
    /// A member whose signature is its Swift type's.
    public init<Value: DBusRepresentable>(_ name: String, _: Value.Type) {
        self.init(name, Value.dbusSignature)
    }
}

/// The arguments of a method that takes or answers nothing.
public struct NoArguments: DBusRecord, Equatable {
    public static let fields: [DBusField<Self>] = []
    public init() {}
}

/// A method's name and arguments, whatever their Swift types: for introspection and its test.
public protocol MethodDeclaration: Sendable {
    var name: String { get }
    var inArguments: [DBusArgument] { get }
    var outArguments: [DBusArgument] { get }
}

/// One method of the contract: its name, and what goes in and comes out.
public struct MethodContract<Input: DBusRecord, Output: DBusRecord>: MethodDeclaration {
    public let name: String
    public var inArguments: [DBusArgument] { Input.members }
    public var outArguments: [DBusArgument] { Output.members }

    public init(_ name: String, _: Input.Type = NoArguments.self, _: Output.Type = NoArguments.self) {
        self.name = name
    }

    /// The reply's values as `Output`, or a mismatch naming the method.
    public func output(_ values: [DBusValue]) throws(ContractMismatch) -> Output {
        do { return try Output(values: values) } catch { throw error.within("the reply to \(name)") }
    }
}

/// One D-Bus property, declared on the field of a record (`BusProperties`) that holds it in a
/// client: its name on the bus; the field's type gives its signature. The declaration is the
/// property's one row in the contract: the record's properties are its fields so declared, in their
/// order, and a server's row names the property by it (`\.$field`).
@propertyWrapper
public struct BusProperty<Value: DBusRepresentable & Equatable>: Sendable, Equatable {
    public let name: String
    public var wrappedValue: Value

    public init(wrappedValue: Value, _ name: String) {
        self.name = name
        self.wrappedValue = wrappedValue
    }

    /// The property itself, with its name: `AgentProperties().$status.name`.
    public var projectedValue: Self { self }

    var member: DBusArgument { DBusArgument(name, Value.self) }
}

extension BusProperty: Encodable where Value: Encodable {
    /// Only the value: `enctl status --json` keys it by the field's Swift name.
    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(wrappedValue)
    }
}

extension BusProperty: Decodable {
    /// Reads the property from the GetAll answer `BusProperties.init` decodes.
    public init(from decoder: Decoder) throws {
        guard let property = (decoder as? GetAllDecoder)?.property else {
            throw ContractMismatch("a D-Bus property is read from a GetAll answer only")
        }
        name = property.name
        do { wrappedValue = try Value(dbusValue: property.value) } catch { throw error.within("the property \(name)") }
    }
}

/// A record whose `@BusProperty` fields are an interface's properties, as GetAll answers them.
/// Their declarations are the whole contract: the names and signatures, their order and the
/// decoding follow from them (through the fields' reflection and the record's synthesized decoding).
public protocol BusProperties: Decodable, Sendable {
    /// A record with every property at its default, from which the declarations are read.
    init()
}

private protocol DeclaredProperty { var member: DBusArgument { get } }
extension BusProperty: DeclaredProperty {}

extension BusProperties {
    /// The properties' names and types, in the interface's order.
    public static var declarations: [DBusArgument] { fields.map(\.member) }

    /// Each property with the Swift name of its field (the backing storage's, without its `_`).
    private static var fields: [(swiftName: String, member: DBusArgument)] {
        Mirror(reflecting: Self()).children.compactMap { child in
            guard let label = child.label, let property = child.value as? any DeclaredProperty else { return nil }
            return (String(label.dropFirst()), property.member)
        }
    }

    /// The record from a GetAll answer: every property present, each of its type.
    public init(_ properties: [String: DBusValue]) throws(ContractMismatch) {
        let names = Dictionary(uniqueKeysWithValues: Self.fields.map { ($0.swiftName, $0.member.name) })
        do { try self.init(from: GetAllDecoder(properties: properties, names: names)) } catch let error as ContractMismatch { throw error } catch {
            throw ContractMismatch("\(error)")
        }
    }
}

/// A GetAll answer as a `Decoder` of a `BusProperties` record: the record's synthesized decoding
/// asks for each field by its Swift name, and the field reads the value of its bus name.
private struct GetAllDecoder: Decoder {
    let properties: [String: DBusValue]
    /// A field's bus name by its Swift name.
    let names: [String: String]
    /// The property one field reads, once the record asked for it.
    var property: (name: String, value: DBusValue)?

    var codingPath: [CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy _: Key.Type) -> KeyedDecodingContainer<Key> { KeyedDecodingContainer(Fields(decoder: self)) }
    func unkeyedContainer() throws -> UnkeyedDecodingContainer { throw Self.notAProperty }
    func singleValueContainer() throws -> SingleValueDecodingContainer { throw Self.notAProperty }

    static let notAProperty = ContractMismatch("a field of a GetAll record that is not declared @BusProperty")

    struct Fields<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let decoder: GetAllDecoder
        var codingPath: [CodingKey] { [] }
        var allKeys: [Key] { decoder.names.keys.compactMap(Key.init(stringValue:)) }

        func contains(_ key: Key) -> Bool { decoder.names[key.stringValue] != nil }
        func decodeNil(forKey _: Key) throws -> Bool { false }

        func decode<T: Decodable>(_: T.Type, forKey key: Key) throws -> T {
            guard let name = decoder.names[key.stringValue] else { throw GetAllDecoder.notAProperty }
            guard let value = decoder.properties[name] else { throw ContractMismatch("the property \(name) is missing") }
            var field = decoder
            field.property = (name, value)
            return try T(from: field)
        }

        func nestedContainer<Nested: CodingKey>(keyedBy _: Nested.Type, forKey _: Key) throws -> KeyedDecodingContainer<Nested> { throw GetAllDecoder.notAProperty }
        func nestedUnkeyedContainer(forKey _: Key) throws -> UnkeyedDecodingContainer { throw GetAllDecoder.notAProperty }
        func superDecoder() throws -> Decoder { throw GetAllDecoder.notAProperty }
        func superDecoder(forKey _: Key) throws -> Decoder { throw GetAllDecoder.notAProperty }
    }
}

/// One signal: its name and arguments.
public struct SignalContract<Arguments: DBusRecord>: Sendable {
    public let name: String

    public init(_ name: String, _: Arguments.Type) { self.name = name }

    public var declaration: DBusSignal { DBusSignal(name, Arguments.members) }

    public func arguments(_ values: [DBusValue]) throws(ContractMismatch) -> Arguments {
        do { return try Arguments(values: values) } catch { throw error.within("the signal \(name)") }
    }
}

extension DBusMethod {
    /// A served method with typed arguments: a call whose arguments do not match the contract is
    /// answered with `invalid` (the interface's InvalidArguments error) before `handler` runs. The
    /// file descriptors a call carries live as long as the call: they are closed once it is
    /// answered, whether `handler` ran, refused it or never ran.
    public init<Input, Output>(_ contract: MethodContract<Input, Output>, queue: DispatchQueue? = nil, invalid: @escaping @Sendable (String) -> DBusError,
                               handler: @escaping @Sendable (DBusMessage, Input) throws(DBusError) -> Output) {
        self.init(contract.name, in: Input.members, out: Output.members, queue: queue) { call throws(DBusError) in
            // Each reading of the arguments gives fresh copies of the descriptors: read once.
            let arguments = call.arguments
            defer { closeDescriptors(in: arguments) }
            let input: Input
            do { input = try Input(values: arguments) } catch { throw invalid("\(contract.name): \(error)") }
            return try handler(call, input).values
        }
    }
}

/// Closes every descriptor among `values`, at any depth: a received one is the receiver's to close.
private func closeDescriptors(in values: [DBusValue]) {
    for value in values {
        switch value {
        case .unixFD(let descriptor): close(descriptor)
        case .array(_, let elements), .structure(let elements): closeDescriptors(in: elements)
        case .variant(let inner): closeDescriptors(in: [inner])
        case .dictionary(_, _, let entries): closeDescriptors(in: entries.flatMap { [$0.key, $0.value] })
        default: break
        }
    }
}
