import ENCore
import Foundation
import Testing

/// JSON Lines sightings: the scanner reads the plain form, JSONDecoder everything else, and both
/// read a line the same way.
@Suite struct SightingsJSONLinesTests {
    static let rpi = "000102030405060708090a0b0c0d0e0f"
    let expected = Sighting(rpi: try! Bytes16(hex: rpi), aem: AssociatedEncryptedMetadata(rawValue: 0xA1B2_C3D4), rssi: -60,
                            time: 1_700_000_000, adapter: "jsonl")

    func scanned(_ line: String) -> Sighting? { Array(line.utf8).withUnsafeBytes { Sighting.scannedJSONLine($0) } }

    @Test(arguments: [
        #"{"rpi":"000102030405060708090a0b0c0d0e0f","aem":"a1b2c3d4","rssi":-60,"time":1700000000}"#,
        #" { "time" : 1700000000 , "rssi":-60, "aem":"A1B2C3D4", "rpi":"000102030405060708090A0B0C0D0E0F" } "#,
        #"{"rpi":"000102030405060708090a0b0c0d0e0f","aem":"a1b2c3d4","rssi":-60,"time":1700000000,"adapter":null,"note":"x","n":null,"k":-1}"#,
    ])
    func thePlainFormIsScanned(line: String) throws {
        #expect(scanned(line) == expected)
        #expect(try Sighting.decodedJSONLine(Data(line.utf8), place: "x") == expected)
    }

    /// Valid JSON the scanner leaves to the decoder: the result is the same.
    @Test(arguments: [
        #"{"rpi":"\u003000102030405060708090a0b0c0d0e0f","aem":"a1b2c3d4","rssi":-60,"time":1700000000}"#,
        #"{"rpi":"000102030405060708090a0b0c0d0e0f","aem":"a1b2c3d4","rssi":-60,"time":1700000000,"extra":[1,{"a":true}]}"#,
        #"{"rpi":"000102030405060708090a0b0c0d0e0f","aem":"a1b2c3d4","rssi":-60,"time":1700000000,"name":"caf\u00e9 é"}"#,
        #"{"rpi":"000102030405060708090a0b0c0d0e0f","aem":"a1b2c3d4","rssi":-60,"time":1700000000,"big":155788560515578856055}"#,
    ])
    func otherJSONIsDecoded(line: String) throws {
        #expect(scanned(line) == nil)
        #expect(try Sighting.jsonLines(line, path: "s.jsonl") == [expected])
    }

    @Test func anUnknownRSSIAndAnAdapterAreKept() throws {
        let line = #"{"rpi":"000102030405060708090a0b0c0d0e0f","aem":"a1b2c3d4","rssi":127,"time":5,"adapter":"hci1"}"#
        let sighting = try #require(scanned(line))
        #expect(sighting.rssi == nil && sighting.adapter == "hci1" && sighting.time == 5)
        #expect(try Sighting.decodedJSONLine(Data(line.utf8), place: "x") == sighting)
    }

    /// The adapter's address picks its RSSI correction; either case, null or absent is unknown.
    @Test(arguments: [(#","adapterAddress":"00:1a:7d:DA:71:13""#, BluetoothAddress("00:1A:7D:DA:71:13")),
                      (#","adapterAddress":null"#, nil), ("", nil)] as [(String, BluetoothAddress?)])
    func theAdaptersAddressIsKept(field: String, address: BluetoothAddress?) throws {
        let line = #"{"rpi":"000102030405060708090a0b0c0d0e0f","aem":"a1b2c3d4","rssi":-60,"time":1700000000"# + field + "}"
        var withAddress = expected
        withAddress.adapterAddress = address
        let decoded = try Sighting.decodedJSONLine(Data(line.utf8), place: "x")
        #expect(scanned(line) == withAddress && decoded == withAddress)
    }

    /// The receiving device's previous scan sets the scan's seconds since the last; null or absent is unknown.
    @Test(arguments: [(#","previousScanTime":1699999760"#, 1_699_999_760), (#","previousScanTime":null"#, nil), ("", nil)] as [(String, Int64?)])
    func thePreviousScanIsKept(field: String, previousScanTime: Int64?) throws {
        let line = #"{"rpi":"000102030405060708090a0b0c0d0e0f","aem":"a1b2c3d4","rssi":-60,"time":1700000000"# + field + "}"
        var withPreviousScan = expected
        withPreviousScan.previousScanTime = previousScanTime
        let decoded = try Sighting.decodedJSONLine(Data(line.utf8), place: "x")
        #expect(scanned(line) == withPreviousScan && decoded == withPreviousScan)
    }

    /// Bad lines are declined by the scanner and refused with the place and the reason.
    @Test(arguments: [
        (#"{"rpi":"00","aem":"a1b2c3d4","rssi":-60,"time":1}"#, "s.jsonl:2: expected 16 bytes"),
        (#"{"rpi":"000102030405060708090a0b0c0d0e0f","aem":"a1b2c3d4","rssi":-600,"time":1}"#, "s.jsonl:2: rssi -600 is outside"),
        (#"{"rpi":"000102030405060708090a0b0c0d0e0f","aem":"a1b2c3d4","rssi":-60,"time":-1}"#, "s.jsonl:2: time must not be negative"),
        (#"{"rpi":"000102030405060708090a0b0c0d0e0f","aem":"a1b2c3d4","rssi":-60,"time":1,"previousScanTime":-5}"#,
         "s.jsonl:2: previousScanTime must not be negative"),
        (#"{"rpi":"000102030405060708090a0b0c0d0e0f","aem":"a1b2c3d4","rssi":-60}"#, "s.jsonl:2: expected {"),
        (#"{"rpi":"000102030405060708090a0b0c0d0e0f","aem":"a1b2c3d4","rssi":-60,"time":1} trailing"#, "s.jsonl:2: expected {"),
        (#"{"rpi":"000102030405060708090a0b0c0d0e0f","aem":"a1b2c3d4","rssi":-60,"time":01}"#, "s.jsonl:2: expected {"),
        (#"{"rpi":"000102030405060708090a0b0c0d0e0g","aem":"a1b2c3d4","rssi":-60,"time":1}"#, "s.jsonl:2: "),
        (#"{"rpi":"000102030405060708090a0b0c0d0e0f","aem":"a1b2c3d4","rssi":-60,"time":1,"adapterAddress":"hci0"}"#,
         #"s.jsonl:2: adapterAddress "hci0" is not an adapter's address such as 00:1A:7D:DA:71:13"#),
    ])
    func badLinesNameTheirPlace(line: String, reason: String) {
        #expect(scanned(line) == nil)
        #expect(throws: SightingsFileError.self) { try Sighting.jsonLines("\n" + line, path: "s.jsonl") }
        do {
            _ = try Sighting.jsonLines("\n" + line, path: "s.jsonl")
        } catch {
            #expect(error.description.hasPrefix(reason), "\(error)")
        }
    }
}
