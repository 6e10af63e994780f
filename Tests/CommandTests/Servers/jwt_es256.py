"""ES256 JSON Web Tokens as both Google servers make and check them (github.com/golang-jwt/jwt
v3.2.2: base64url without padding, the signature as r || s of 32 bytes each), with Debian's
python3-cryptography."""
import base64, json

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, utils


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64url(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Signer:
    """A P-256 key with its key id, as the verification server's token and certificate signers."""

    def __init__(self, kid):
        self.kid = kid
        self.key = ec.generate_private_key(ec.SECP256R1())

    def sign(self, claims):
        header = b64url(json.dumps({"alg": "ES256", "kid": self.kid, "typ": "JWT"}).encode())
        payload = b64url(json.dumps(claims).encode())
        r, s = utils.decode_dss_signature(self.key.sign(f"{header}.{payload}".encode(), ec.ECDSA(hashes.SHA256())))
        return f"{header}.{payload}.{b64url(r.to_bytes(32, 'big') + s.to_bytes(32, 'big'))}"


class InvalidToken(Exception):
    pass


def verify(token, public_keys):
    """The header and claims of `token` when its ES256 signature verifies under the key its `kid`
    names in `public_keys`; InvalidToken with jwt-go's words otherwise. Times are the caller's."""
    parts = token.split(".")
    if len(parts) != 3:
        raise InvalidToken("token contains an invalid number of segments")
    try:
        header, claims, signature = json.loads(unb64url(parts[0])), json.loads(unb64url(parts[1])), unb64url(parts[2])
    except ValueError as error:
        raise InvalidToken(f"malformed token: {error}")
    if header.get("alg") != "ES256":
        raise InvalidToken("unsupported signing method, must be ES256")
    if "kid" not in header:
        raise InvalidToken("missing required header field, 'kid' indicating key id")
    key = public_keys.get(header["kid"])
    if key is None:
        raise InvalidToken(f"no public key for kid {header['kid']}")
    if len(signature) != 64:
        raise InvalidToken("crypto/ecdsa: verification error")
    der = utils.encode_dss_signature(int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big"))
    try:
        key.verify(der, f"{parts[0]}.{parts[1]}".encode(), ec.ECDSA(hashes.SHA256()))
    except InvalidSignature:
        raise InvalidToken("crypto/ecdsa: verification error")
    return header, claims


def standard_claims_error(claims, now):
    """jwt-go v3's StandardClaims.Valid() with no leeway: the first failing check's message, or None."""
    if "exp" in claims and now > claims["exp"]:
        return f"token is expired by {now - claims['exp']}s"
    if "iat" in claims and now < claims["iat"]:
        return "Token used before issued"
    if "nbf" in claims and now < claims["nbf"]:
        return "token is not valid yet"
    return None
