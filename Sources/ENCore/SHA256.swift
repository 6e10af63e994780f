import CENOpenSSL
import FoundationEssentials
import Glibc

/// SHA-256 of whole files, to recognise a key file already processed whatever its name.
public enum SHA256 {
    public static func digest(_ data: Data) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        data.withUnsafeBytes { bytes in
            _ = EVP_Digest(bytes.baseAddress, bytes.count, &digest, &length, EVP_sha256(), nil)
        }
        return digest
    }
}
