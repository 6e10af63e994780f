import CENOpenSSL
import FoundationEssentials
import Glibc

/// SHA-256 of whole files, to recognise a key file already processed whatever its name, and of
/// bytes that arrive a piece at a time (`Hasher`), as a streamed export.bin does.
public enum SHA256 {
    public static func digest(_ data: Data) -> [UInt8] {
        let hasher = Hasher()
        data.withUnsafeBytes { hasher.update($0) }
        return hasher.finalize()
    }

    /// A digest fed in pieces. Not Sendable: one thread feeds it at a time.
    public final class Hasher {
        private let context: OpaquePointer

        public init() {
            // Both fail only when OpenSSL cannot allocate, which Swift's own allocations treat as fatal too.
            guard let context = EVP_MD_CTX_new(), EVP_DigestInit_ex(context, EVP_sha256(), nil) == 1 else {
                fatalError("OpenSSL could not start a SHA-256 digest (out of memory)")
            }
            self.context = context
        }

        deinit { EVP_MD_CTX_free(context) }

        public func update(_ bytes: UnsafeRawBufferPointer) {
            guard bytes.count > 0 else { return }
            EVP_DigestUpdate(context, bytes.baseAddress, bytes.count)
        }

        /// The digest of everything fed; the hasher is spent after this.
        public func finalize() -> [UInt8] {
            var digest = [UInt8](repeating: 0, count: 32)
            var length: UInt32 = 0
            EVP_DigestFinal_ex(context, &digest, &length)
            return digest
        }
    }
}
