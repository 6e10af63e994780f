import ENCore

/// The management commands enagentd sends (doc/mgmt-api.txt), one type each.

/// Address types in Start/Stop Discovery: LE public and LE random.
public let leAddressTypes: UInt8 = 0x06

/// Read Controller Index List (0x0003): the controllers the kernel has, by index (hciN's N).
public struct ReadControllerIndexList: ManagementCommand {
    public static let opcode: UInt16 = 0x0003
    public static let name = "Read Controller Index List"
    /// The index a command about no controller is sent to (MGMT_INDEX_NONE).
    public static let noController: UInt16 = 0xFFFF
    public var parameters: [UInt8] { [] }
    public init() {}

    /// Num_Controllers (2), then each index (2).
    public static func decode(_ reply: [UInt8]) throws(ManagementError) -> [UInt16] {
        try numbers(in: reply, countAt: 0, of: name)
    }
}

/// Read Controller Information (0x0004): the adapter's address and settings.
public struct ReadControllerInformation: ManagementCommand {
    public static let opcode: UInt16 = 0x0004
    public static let name = "Read Controller Information"
    public var parameters: [UInt8] { [] }

    public struct Settings: OptionSet, Sendable {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }
        public static let powered = Settings(rawValue: 1 << 0)
        public static let connectable = Settings(rawValue: 1 << 1)
        public static let bredr = Settings(rawValue: 1 << 7)
        public static let le = Settings(rawValue: 1 << 9)
        public static let advertising = Settings(rawValue: 1 << 10)
        public static let privacy = Settings(rawValue: 1 << 13)
    }

    public struct Information: Sendable {
        /// The controller's own address.
        public var address: BluetoothAddress
        /// What the controller can do, and what is on now.
        public var supported: Settings
        public var current: Settings
    }

    public init() {}

    /// Address (6, least significant byte first), version (1), manufacturer (2), supported
    /// settings (4), current settings (4), …
    public static func decode(_ reply: [UInt8]) throws(ManagementError) -> Information {
        guard reply.count >= 17 else { throw .malformedReply(name, reply) }
        let address = BluetoothAddress(rawValue: reply[0..<6].reversed().reduce(0) { $0 << 8 | UInt64($1) })!
        return Information(address: address, supported: Settings(rawValue: UInt32(littleEndian: reply, at: 9)),
                           current: Settings(rawValue: UInt32(littleEndian: reply, at: 13)))
    }
}

/// Set Powered (0x0005): switches the controller on or off; the reply is its current settings.
/// The kernel refuses to switch on a controller that rfkill blocks (status RFKilled).
public struct SetPowered: ManagementCommand {
    public static let opcode: UInt16 = 0x0005
    public static let name = "Set Powered"
    public var on: Bool
    public var parameters: [UInt8] { [on ? 1 : 0] }
    public init(_ on: Bool) { self.on = on }
    public static func decode(_ reply: [UInt8]) throws(ManagementError) -> ReadControllerInformation.Settings {
        guard reply.count >= 4 else { throw .malformedReply(name, reply) }
        return ReadControllerInformation.Settings(rawValue: UInt32(littleEndian: reply, at: 0))
    }
}

/// A list of 16-bit numbers in a reply of `command`'s: their count at `offset`, then each.
private func numbers(in reply: [UInt8], countAt offset: Int, of command: String) throws(ManagementError) -> [UInt16] {
    guard reply.count >= offset + 2 else { throw .malformedReply(command, reply) }
    let count = Int(UInt16(littleEndian: reply, at: offset))
    guard reply.count >= offset + 2 + 2 * count else { throw .malformedReply(command, reply) }
    return (0..<count).map { UInt16(littleEndian: reply, at: offset + 2 + 2 * $0) }
}

/// Stop Discovery (0x0024): ends a discovery the kernel runs (one left by a bluetoothd that died),
/// named by the address types it was started with.
public struct StopDiscovery: ManagementCommand {
    public static let opcode: UInt16 = 0x0024
    public static let name = "Stop Discovery"
    public var addressTypes: UInt8
    public var parameters: [UInt8] { [addressTypes] }
    public init(addressTypes: UInt8 = leAddressTypes) { self.addressTypes = addressTypes }
    public static func decode(_ reply: [UInt8]) throws(ManagementError) {}
}

/// Read Advertising Features (0x003D): how many instances the controller offers.
public struct ReadAdvertisingFeatures: ManagementCommand {
    public static let opcode: UInt16 = 0x003D
    public static let name = "Read Advertising Features"
    public var parameters: [UInt8] { [] }
    public init() {}

    public struct Features: Equatable, Sendable {
        public var supportedFlags: UInt32
        public var maximumDataLength: UInt8
        public var maximumInstances: UInt8
        public var instances: [UInt8]

        /// Whether the controller has LE Extended Advertising (BT 5): the kernel offers a secondary
        /// PHY (flag 7, "secondary channel with LE 1M") only then. Without it (BT 4.x) the kernel
        /// drives the legacy commands, with one random address for advertising and scanning.
        public var hasExtendedAdvertising: Bool { supportedFlags & (1 << 7) != 0 }

        /// The lowest instance that is not listed, which no one uses: the list holds every instance
        /// numbered up to the count of instances (below), so an unlisted one up to that count is
        /// free, and when there is none, every instance is listed and the count's successor is
        /// free. Nil when every instance the controller offers is listed.
        public var lowestUnlisted: UInt8? {
            maximumInstances == 0 ? nil : (1...maximumInstances).first { !instances.contains($0) }
        }
    }

    public static func decode(_ reply: [UInt8]) throws(ManagementError) -> Features {
        guard reply.count >= 8, reply.count >= 8 + Int(reply[7]) else { throw .malformedReply(name, reply) }
        return Features(supportedFlags: UInt32(littleEndian: reply, at: 0), maximumDataLength: reply[4], maximumInstances: reply[6],
                        instances: Array(reply[8..<(8 + Int(reply[7]))]))
    }
}

/// The advertising instances other programs hold on a controller. Read Advertising Features does
/// not list them all: kernels 6.1 and 6.12 list only the instances numbered up to the count
/// of instances, so a beacon alone in the highest instance is not listed, and a program that took
/// the highest unlisted instance would overwrite it. Each instance held for a moment at the lowest
/// unlisted number (parameters only: nothing goes on the air) raises the count by one; held until
/// every instance is listed, they show every other program's.
public enum AdvertisingInstances {
    /// What holding instances showed: those in use by others, those held (to be released by the
    /// caller), and whether the controller ran out of advertising sets before the kernel listed
    /// every instance.
    public struct Survey: Equatable {
        public let inUse: Set<UInt8>
        public let held: [UInt8]
        public let controllerFull: Bool

        /// The instance for a new advertisement: the highest that no one uses (bluetoothd hands
        /// out the lowest first). When the controller ran out of sets first (some are taken by
        /// what the kernel does not list, such as its own advertisement of an adapter that was
        /// connectable), the highest held, which had a set. nil when none is free.
        public func highestFree(maximum: UInt8) -> UInt8? {
            if controllerFull { return held.max() }
            return maximum == 0 ? nil : (1...maximum).reversed().first { !inUse.contains($0) }
        }
    }

    /// Surveys the controller's `features`: `hold(n)` adds instance `n` and answers the new list,
    /// or nil when the controller has no advertising set for it (nothing was added).
    public static func survey(_ features: ReadAdvertisingFeatures.Features, hold: (UInt8) throws -> [UInt8]?) rethrows -> Survey {
        var current = features, held = [UInt8]()
        while let free = current.lowestUnlisted, held.count < Int(current.maximumInstances) {
            guard let listed = try hold(free) else { return Survey(inUse: Set(current.instances).subtracting(held), held: held, controllerFull: true) }
            held.append(free)
            current.instances = listed
        }
        return Survey(inUse: Set(current.instances).subtracting(held), held: held, controllerFull: false)
    }
}

/// Remove Advertising (0x003F).
public struct RemoveAdvertising: ManagementCommand {
    public static let opcode: UInt16 = 0x003F
    public static let name = "Remove Advertising"
    public var instance: UInt8
    public var parameters: [UInt8] { [instance] }
    public init(instance: UInt8) { self.instance = instance }
    public static func decode(_ reply: [UInt8]) throws(ManagementError) {}
}

/// Add Extended Advertising Parameters (0x0054): an instance's interval and TX power.
/// Without the connectable flag the kernel sends legacy ADV_NONCONN_IND PDUs from a fresh
/// non-resolvable random address, unless the adapter as a whole is connectable.
public struct AddExtendedAdvertisingParameters: ManagementCommand {
    public static let opcode: UInt16 = 0x0054
    public static let name = "Add Extended Advertising Parameters"

    public struct Flags: OptionSet, Sendable {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }
        public static let useDuration = Flags(rawValue: 1 << 12)
        public static let useInterval = Flags(rawValue: 1 << 14)
        public static let useTransmitPower = Flags(rawValue: 1 << 15)
    }

    public var instance: UInt8
    public var flags: Flags
    /// Seconds of each of the instance's turns on a legacy controller's one set, when `flags` has
    /// `useDuration`; else the kernel's default, 2 s (hci_add_adv_instance). The kernel schedules
    /// an instance added meanwhile only when the current turn ends (add_ext_adv_data).
    public var durationSeconds: UInt16
    /// In advertising slots of 0.625 ms.
    public var interval: ClosedRange<UInt32>
    /// Requested dBm; the controller selects a level up to it.
    public var transmitPower: Int8

    public init(instance: UInt8, flags: Flags, durationSeconds: UInt16 = 0, interval: ClosedRange<UInt32>, transmitPower: Int8) {
        self.instance = instance
        self.flags = flags
        self.durationSeconds = durationSeconds
        self.interval = interval
        self.transmitPower = transmitPower
    }

    /// Milliseconds to advertising slots (0.625 ms), rounded to the nearest slot.
    public static func slots(milliseconds: UInt32) -> UInt32 { (milliseconds * 8 + 2) / 5 }

    /// The timeout is 0, no expiry (kernels up to at least 6.1 hand a timeout to the controller as
    /// 16-bit milliseconds, so above 65 s it wraps).
    public var parameters: [UInt8] {
        let timeout: [UInt8] = [0, 0]
        let fields: [[UInt8]] = [[instance], flags.rawValue.littleEndianBytes, durationSeconds.littleEndianBytes, timeout,
                                 interval.lowerBound.littleEndianBytes, interval.upperBound.littleEndianBytes, [UInt8(bitPattern: transmitPower)]]
        return fields.flatMap { $0 }
    }

    public struct Reply: Equatable, Sendable {
        public var instance: UInt8
        /// The level the controller selected for this set, in dBm.
        public var transmitPower: Int8
        public var maximumDataLength: UInt8
    }

    public static func decode(_ reply: [UInt8]) throws(ManagementError) -> Reply {
        guard reply.count >= 4 else { throw .malformedReply(name, reply) }
        return Reply(instance: reply[0], transmitPower: Int8(bitPattern: reply[1]), maximumDataLength: reply[2])
    }
}

/// Add Advertising (0x003E), the older one-step command: an instance with its AD structures and
/// a timeout in seconds, after which the kernel removes it (0: none). Unlike the extended pair,
/// the kernel takes it while the controller is off (without a timeout: one is Rejected then),
/// and enables the instance at power-on.
public struct AddAdvertising: ManagementCommand {
    public static let opcode: UInt16 = 0x003E
    public static let name = "Add Advertising"
    public var instance: UInt8
    public var timeoutSeconds: UInt16
    public var advertisingData: [UInt8]
    public init(instance: UInt8, timeoutSeconds: UInt16, advertisingData: [UInt8]) {
        self.instance = instance
        self.timeoutSeconds = timeoutSeconds
        self.advertisingData = advertisingData
    }
    /// Flags 0 (non-connectable, no AD of the kernel's own), duration 0, no scan response.
    public var parameters: [UInt8] {
        let fields: [[UInt8]] = [[instance], UInt32(0).littleEndianBytes, [0, 0], timeoutSeconds.littleEndianBytes,
                                 [UInt8(advertisingData.count), 0], advertisingData]
        return fields.flatMap { $0 }
    }
    public static func decode(_ reply: [UInt8]) throws(ManagementError) {}
}

/// Add Extended Advertising Data (0x0055): the instance's AD structures; this enables it.
public struct AddExtendedAdvertisingData: ManagementCommand {
    public static let opcode: UInt16 = 0x0055
    public static let name = "Add Extended Advertising Data"
    public var instance: UInt8
    public var advertisingData: [UInt8]
    public init(instance: UInt8, advertisingData: [UInt8]) {
        self.instance = instance
        self.advertisingData = advertisingData
    }
    public var parameters: [UInt8] { [instance, UInt8(advertisingData.count), 0] + advertisingData }
    public static func decode(_ reply: [UInt8]) throws(ManagementError) {}
}

/// Read Advertisement Monitor Features (0x0051): the monitors registered on the controller, by
/// anyone (bluetoothd's and this agent's alike).
public struct ReadAdvertisementMonitorFeatures: ManagementCommand {
    public static let opcode: UInt16 = 0x0051
    public static let name = "Read Advertisement Monitor Features"
    public var parameters: [UInt8] { [] }
    public init() {}

    /// Supported and enabled features (4 + 4), max handles (2), max patterns (1), handle count
    /// (2), then the handles.
    public static func decode(_ reply: [UInt8]) throws(ManagementError) -> [UInt16] {
        try numbers(in: reply, countAt: 11, of: name)
    }
}

/// Add Advertisement Patterns Monitor (0x0052): the kernel scans passively while any monitor is
/// registered (no SCAN_REQ leaves the radio, so no own address does either), with the
/// controller's duplicate filter off, and reports what it hears in Device Found events. Without
/// a controller that filters (Microsoft's extension), the kernel does not match the patterns:
/// every advertisement is reported, and the reader picks what it wants.
public struct AddAdvertisementPatternsMonitor: ManagementCommand {
    public static let opcode: UInt16 = 0x0052
    public static let name = "Add Advertisement Patterns Monitor"

    /// AD data of type `type` whose bytes from `offset` on are `value`.
    public struct Pattern: Equatable, Sendable {
        public var type: UInt8, offset: UInt8, value: [UInt8]

        /// Service data of the Exposure Notification service (0xFD6F).
        public static let exposureNotification = Pattern(type: 0x16, offset: 0, value: [0x6F, 0xFD])
    }

    public var patterns: [Pattern]
    public init(patterns: [Pattern]) { self.patterns = patterns }

    /// The count, then per pattern its type, offset, length and 31 bytes of value (zero-padded).
    public var parameters: [UInt8] {
        var bytes: [UInt8] = [UInt8(patterns.count)]
        for pattern in patterns {
            bytes += [pattern.type, pattern.offset, UInt8(pattern.value.count)]
            bytes += pattern.value
            bytes += [UInt8](repeating: 0, count: 31 - pattern.value.count)
        }
        return bytes
    }

    /// The monitor's handle.
    public static func decode(_ reply: [UInt8]) throws(ManagementError) -> UInt16 {
        guard reply.count >= 2 else { throw .malformedReply(name, reply) }
        return UInt16(littleEndian: reply, at: 0)
    }
}

/// Remove Advertisement Monitor (0x0053): one monitor (handle 0 would remove every program's).
public struct RemoveAdvertisementMonitor: ManagementCommand {
    public static let opcode: UInt16 = 0x0053
    public static let name = "Remove Advertisement Monitor"
    public var handle: UInt16
    public var parameters: [UInt8] { handle.littleEndianBytes }
    public init(handle: UInt16) {
        precondition(handle != 0, "handle 0 removes every program's monitors")
        self.handle = handle
    }
    public static func decode(_ reply: [UInt8]) throws(ManagementError) {}
}
