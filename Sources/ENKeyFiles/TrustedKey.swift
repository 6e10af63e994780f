import ENCore
import FoundationEssentials

/// A public key trusted to sign key files, for one (key id, key version) or, with nil, any.
public struct TrustedKey: Sendable {
    public var keyId: String?
    public var keyVersion: String?
    public var publicKey: P256PublicKey

    public init(keyId: String? = nil, keyVersion: String? = nil, publicKey: P256PublicKey) {
        self.keyId = keyId
        self.keyVersion = keyVersion
        self.publicKey = publicKey
    }

    func covers(_ info: SignatureInfo) -> Bool {
        (keyId.map { $0 == info.keyId } ?? true) && (keyVersion.map { $0 == info.keyVersion } ?? true)
    }

    /// Reads a key given as a PEM "PUBLIC KEY" block or as base64 of a DER SubjectPublicKeyInfo
    /// (the form health authorities publish).
    public static func publicKey(from text: String) throws(P256KeyError) -> P256PublicKey {
        if text.contains("-----BEGIN") { return try P256PublicKey(pem: text) }
        let compact = text.filter { !$0.isWhitespace }
        guard let der = Data(base64Encoded: compact) else { throw .unreadablePublicKey }
        return try P256PublicKey(subjectPublicKeyInfo: Array(der))
    }
}

/// The outcome of checking an export's signatures.
public enum SignatureStatus: String, Sendable, Codable {
    /// A trusted key for the signature's key id and version verified it.
    case verified
    /// A trusted key applied, but the signature does not match (or uses another algorithm).
    case invalid
    /// The file carries no signature.
    case unsigned
    /// No trusted key matches any signature's key id and version.
    case unknownKey = "unknown-key"
}

extension KeyFileSummary {
    /// Checks export.sig's signatures over export.bin against `trustedKeys`.
    public func signatureStatus(trustedKeys: [TrustedKey]) -> SignatureStatus {
        guard let signatures, !signatures.isEmpty else { return .unsigned }
        var sawTrustedKey = false
        for signature in signatures {
            let candidates = trustedKeys.filter { $0.covers(signature.info) }
            guard !candidates.isEmpty else { continue }
            sawTrustedKey = true
            guard signature.info.isECDSAP256SHA256 else { continue }
            if candidates.contains(where: { $0.publicKey.isValidSignature(signature.signature, forSHA256: exportBinSHA256) }) { return .verified }
        }
        return sawTrustedKey ? .invalid : .unknownKey
    }
}

extension KeyExport {
    /// Checks the signatures over export.bin against `trustedKeys`.
    public func signatureStatus(trustedKeys: [TrustedKey]) -> SignatureStatus {
        summary.signatureStatus(trustedKeys: trustedKeys)
    }
}
