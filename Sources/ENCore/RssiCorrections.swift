/// The receive calibration of each adapter: dB added to every RSSI it reports before attenuation
/// is computed, so that a radio that hears weaker or stronger than a phone scores like one (the
/// phones' calibration tables keep one such correction per receiving device model). Adapters are
/// named by address; one not named, and a sighting recorded before addresses were, get the default.
public struct RssiCorrections: Sendable, Equatable {
    /// Corrections beyond this are no calibration but a mistake.
    public static let plausible: ClosedRange<Int> = -100...100

    public var defaultCorrection: Int
    public var byAdapter: [BluetoothAddress: Int]

    public init(defaultCorrection: Int = 0, byAdapter: [BluetoothAddress: Int] = [:]) {
        self.defaultCorrection = defaultCorrection
        self.byAdapter = byAdapter
    }

    /// The correction for sightings of the adapter at `address` (nil: unknown).
    public func correction(for address: BluetoothAddress?) -> Int {
        address.flatMap { byAdapter[$0] } ?? defaultCorrection
    }
}
