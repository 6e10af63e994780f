import CENBluetooth
import CENCurl
import CENDBus
import CENKernel
import CENOpenSSL
import CENSQLite
import CENSystemd
import CENZlib
import Testing

/// Each system library module imports and links against the Debian library it wraps.
@Suite struct CModuleTests {
    @Test func openSSLIsVersion3() {
        #expect(OpenSSL_version_num() >> 28 == 3)
    }

    @Test func libdbusIsVersion1AndExportsItsTypeCodes() {
        var major: Int32 = 0, minor: Int32 = 0, micro: Int32 = 0
        dbus_get_version(&major, &minor, &micro)
        #expect(major == 1)
        #expect(CENDBUS_TYPE_STRING == Int32(UInt8(ascii: "s")))
        #expect(CENDBUS_TYPE_UNIX_FD == Int32(UInt8(ascii: "h")))
        #expect(CENDBUS_TYPE_DICT_ENTRY == Int32(UInt8(ascii: "e")))
    }

    @Test func libsystemdAnswersWithoutASystemdManager() {
        // Outside a unit there is no NOTIFY_SOCKET: sd_notify reports that it did nothing.
        #expect(sd_notify(0, "STATUS=test") >= 0)
    }

    @Test func theKernelSaysWhetherItsClockIsSynchronised() {
        // Any answer but "refused": adjtimex(2) read-only needs no privilege.
        #expect([0, 1].contains(cen_kernel_clock_synchronised()))
    }

    @Test func zlibMatchesItsHeader() {
        #expect(String(cString: zlibVersion()) == String(cString: CENZLIB_VERSION))
    }

    @Test func libcurlSpeaksHTTPSThroughOpenSSL() {
        let info = curl_version_info(CENCURL_VERSION_NOW)!.pointee
        #expect(String(cString: info.ssl_version).hasPrefix("OpenSSL/3"))
        #expect(info.features & CURL_VERSION_SSL != 0)
    }

    @Test func sqlite3IsThreadSafeVersion3() {
        // sqlite3_threadsafe: 0 would make even separate connections unsafe to use from two threads.
        #expect(sqlite3_libversion_number() >= 3_037_000)
        #expect(sqlite3_threadsafe() != 0)
    }

    @Test func libbluetoothKnowsItsCompanyIdentifiers() {
        #expect(String(cString: bt_compidtostr(2)) == "Intel Corp.")
    }
}
