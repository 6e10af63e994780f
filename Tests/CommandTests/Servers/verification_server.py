"""The device API of google/exposure-notifications-verification-server (5a27cc44), as its code
behaves, not as its docs say where the two differ (noted below). Sources, by file:function:

- internal/routes/apiserver.go:APIServer: POST only; requireAPIKey, then chaff, then the rate
  limiter, then the handler.
- pkg/controller/middleware/apikey.go:RequireAPIKey, pkg/controller/controller.go:Unauthorized:
  a missing or unknown X-API-Key is 401 {"error":"unauthorized","errorCode":"","error_code":""}
  for a JSON request.
- pkg/controller/middleware/chaff.go:ProcessChaff, go-chaff v0.6.0 tracker.go:HandleTrack and
  json.go:JSONResponder.Write: X-Chaff gets 200 with {"padding": ...}, or nothing before any real
  request, and no JSON Content-Type (written after WriteHeader): docs/api.md says clients MUST NOT
  parse it.
- pkg/ratelimit/limitware/middleware.go:Handle: 429, Retry-After as an RFC 1123 date, body
  "Too Many Requests\\n" as text.
- pkg/controller/json_bind.go:BindJSON, content_type.go:IsJSONContentType: Content-Type must begin
  with application/json, at most 64,000 bytes, unknown members refused (`unknown field "\\"x\\""`),
  all 400; errorCode unparsable_request on /api/verify, token_invalid on /api/certificate.
- pkg/controller/verifyapi/verify.go:HandleVerify, pkg/database/token.go:VerifyCodeAndIssueToken,
  pkg/api/util.go:GetAcceptedTestTypes: an unknown, used or (checked first) expired code is 400
  code_invalid / code_invalid / code_expired (code_not_found is never sent); a test type outside
  `accept` is 412 unsupported_test_type and keeps the code; otherwise the code is claimed and the
  answer carries testtype, symptomDate, testDate (omitted when empty) and the token, an ES256 JWT
  (aud = iss = TOKEN_ISSUER, exp = now + VERIFICATION_TOKEN_DURATION (24h), jti, iat,
  sub "testtype.symptomDate.testDate").
- pkg/controller/certapi/certificate.go:HandleCertificate, certapi.go:validateToken,
  pkg/database/token.go:ClaimToken: a token whose JWT has expired is 400 token_invalid "verification
  token expired"; an HMAC that is not base64 or not 32 bytes is 400 hmac_invalid; a token used
  before is 400 token_expired "verification token invalid" (sic: the constants' comments and the
  docs say the opposite); the token is claimed only after the certificate is signed. The
  certificate: ES256, kid CERTIFICATE_SIGNING_KEY_ID (v1), claims iss (CERTIFICATE_ISSUER), aud
  (CERTIFICATE_AUDIENCE, a string), iat = nbf = now - ALLOWED_CLOCK_SKEW (5s), exp = now +
  CERTIFICATE_DURATION (15m), reportType, symptomOnsetInterval when there is a symptom date,
  tekmac = the request's ekeyhmac as sent.
- pkg/api/api.go:ErrorReturn, Padding.MarshalJSON, pkg/render/json.go:RenderJSON: errors are
  {"error","errorCode","error_code"} without padding; answers carry 1024-2047 random bytes of
  padding, std base64; json.Encoder ends the body with a newline."""
import base64, binascii, email.utils, json, os, secrets, threading, time

import jwt_es256

TOKEN_ISSUER = "diagnosis-verification-example"
CERTIFICATE_ISSUER = "diagnosis-verification-example"
CERTIFICATE_AUDIENCE = "exposure-notifications-server"
ALLOWED_CLOCK_SKEW = 5
MAX_BODY_BYTES = 64_000
TEST_TYPES = ("confirmed", "likely", "negative", "user-report")
ACCEPT = {"confirmed": {"confirmed"}, "likely": {"confirmed", "likely"}, "negative": {"confirmed", "likely", "negative"},
          "user-report": {"confirmed", "user-report"}}


class Response:
    def __init__(self, status, body=b"", content_type="application/json", headers=None):
        self.status, self.body, self.content_type, self.headers = status, body, content_type, headers or {}


def padding():
    return base64.b64encode(os.urandom(1024 + secrets.randbelow(1024))).decode()


def encoded(document):
    return (json.dumps(document) + "\n").encode()


def error(status, message, code):
    return Response(status, encoded({"error": message, "errorCode": code, "error_code": code}))


def bind_json(headers, raw, members):
    """controller.BindJSON: the object, or the error text."""
    if not headers.get("Content-Type", "")[:16].startswith("application/json"):
        return None, "content-type is not application/json"
    if len(raw) > MAX_BODY_BYTES:
        return None, "http: request body too large"
    if not raw:
        return None, "body must not be empty"
    try:
        document, end = json.JSONDecoder().raw_decode(raw.decode())
    except (UnicodeDecodeError, json.JSONDecodeError) as failure:
        return None, f"malformed json at position {getattr(failure, 'pos', 0)}"
    if raw.decode()[end:].strip():
        return None, "body must contain only one JSON object"
    if not isinstance(document, dict):
        return None, "failed to decode json: not an object"
    for name in document:
        if name not in members:
            return None, f'unknown field "{json.dumps(name)}"'
    return document, None


class VerificationServer:
    def __init__(self, api_key, codes, test_date, omitted, token_seconds, certificate_seconds, code_seconds, rate_limit_faults):
        self.api_key = api_key
        self.lock = threading.Lock()
        now = time.time()
        # pkg/database/vercode.go: one row per code; expiry checked before the claim.
        self.codes = {code: {"testtype": "confirmed", "testDate": test_date, "symptomDate": "", "expires": now + code_seconds,
                             "claimed": False} for code in codes}
        self.omitted = omitted
        self.token_seconds, self.certificate_seconds = token_seconds, certificate_seconds
        self.tokens = {}  # jti → {"expires", "used"} (pkg/database/token.go: Token)
        self.token_signer = jwt_es256.Signer("token-key-1")
        self.certificate_signer = jwt_es256.Signer("v1")
        self.rate_limit_faults = list(rate_limit_faults)  # Retry-After seconds of the next 429s
        self.real_requests = 0

    @property
    def certificate_keys(self):
        """What the key server trusts for this issuer (its verification_keys table)."""
        return {self.certificate_signer.kid: self.certificate_signer.key.public_key()}

    def handle(self, path, headers, raw):
        if path not in ("/api/verify", "/api/certificate"):
            return Response(404, b"404 page not found\n", "text/plain; charset=utf-8")
        if headers.get("X-API-Key", "").strip() != self.api_key:
            return Response(401, encoded({"error": "unauthorized", "errorCode": "", "error_code": ""}))
        if headers.get("X-Chaff"):
            with self.lock:
                body = b"" if self.real_requests == 0 else json.dumps({"padding": padding()}).encode()
            return Response(200, body, "text/plain; charset=utf-8")
        with self.lock:
            if self.rate_limit_faults and path == "/api/certificate":
                retry = time.time() + self.rate_limit_faults.pop(0)
                return Response(429, b"Too Many Requests\n", "text/plain; charset=utf-8",
                                {"Retry-After": email.utils.formatdate(retry, usegmt=True)})
            self.real_requests += 1
            return self.verify(headers, raw) if path == "/api/verify" else self.certificate(headers, raw)

    def verify(self, headers, raw):
        request, failure = bind_json(headers, raw, ("code", "accept", "nonce", "padding"))
        if failure:
            return error(400, failure, "unparsable_request")
        accepted = set()
        for kind in request.get("accept") or TEST_TYPES:
            if str(kind).lower() not in ACCEPT:
                return error(400, f"invalid accepted test type: {kind}", "invalid_test_type")
            accepted |= ACCEPT[str(kind).lower()]
        code = self.codes.get(request.get("code", ""))
        if code is None:
            return error(400, "verification code invalid", "code_invalid")
        if code["expires"] <= time.time():
            return error(400, "verification code expired", "code_expired")
        if code["claimed"]:
            return error(400, "verification code invalid", "code_invalid")
        if code["testtype"] not in accepted:
            return error(412, "verification code has unsupported test type", "unsupported_test_type")
        code["claimed"] = True
        now = int(time.time())
        jti = base64.b64encode(os.urandom(96)).decode().rstrip("=")
        self.tokens[jti] = {"expires": now + self.token_seconds, "used": False, "code": code}
        token = self.token_signer.sign({"aud": TOKEN_ISSUER, "iss": TOKEN_ISSUER, "exp": now + self.token_seconds, "jti": jti, "iat": now,
                                        "sub": f'{code["testtype"]}.{code["symptomDate"]}.{code["testDate"]}'})
        answer = {"testtype": code["testtype"], "symptomDate": code["symptomDate"], "testDate": code["testDate"], "token": token}
        answer = {name: value for name, value in answer.items() if value and name not in self.omitted}
        return Response(200, encoded({**answer, "padding": padding()}))

    def certificate(self, headers, raw):
        request, failure = bind_json(headers, raw, ("token", "ekeyhmac", "padding"))
        if failure:
            return error(400, failure, "token_invalid")
        now = int(time.time())
        try:
            _, claims = jwt_es256.verify(request.get("token", ""), {self.token_signer.kid: self.token_signer.key.public_key()})
        except jwt_es256.InvalidToken:
            return error(400, "invalid verification token", "token_invalid")
        if jwt_es256.standard_claims_error(claims, now):
            return error(400, "verification token expired", "token_invalid")
        if claims.get("iss") != TOKEN_ISSUER or claims.get("aud") != TOKEN_ISSUER:
            return error(400, "verification token not valid", "token_invalid")
        try:
            tekmac = base64.b64decode(request.get("ekeyhmac", ""), validate=True)
        except (binascii.Error, ValueError) as failure:
            return error(400, f"exposure key HMAC is not a valid base64: {failure}", "hmac_invalid")
        if len(tekmac) != 32:
            return error(400, f"exposure key HMAC is not the correct length, want: 32 got: {len(tekmac)}", "hmac_invalid")
        issued = now - ALLOWED_CLOCK_SKEW
        certificate = self.certificate_signer.sign({"reportType": claims["sub"].split(".")[0], "tekmac": request["ekeyhmac"],
                                                    "aud": CERTIFICATE_AUDIENCE, "exp": now + self.certificate_seconds,
                                                    "iat": issued, "iss": CERTIFICATE_ISSUER, "nbf": issued})
        token = self.tokens.get(claims.get("jti"))
        if token is None or token["expires"] <= now:
            return error(400, "verification token expired", "token_expired")
        if token["used"]:
            return error(400, "verification token invalid", "token_expired")
        token["used"] = True
        return Response(200, encoded({"certificate": certificate, "padding": padding()}))
