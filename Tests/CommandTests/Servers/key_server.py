"""POST /v1/publish and the export bucket of google/exposure-notifications-server (2041f77a), as
its code behaves. Sources, by file:function:

- internal/publish/publish.go:Routes, internal/middleware/chaff.go:ProcessChaff: any method;
  X-Chaff gets 200 with {"padding": ...} or nothing, no JSON Content-Type; no API key, no rate
  limiter. internal/middleware/maintenance.go:ProcessMaintenance: 429 {"error": "please try
  again later"}, no Retry-After.
- internal/jsonutil/unmarshal.go:Unmarshal (publish_v1.go:handleRequest): Content-Type not
  application/json 415, over 64,000 bytes 413, unknown members and a non-string padding 400
  bad_request, "error unmarshalling API call, code: N: ...".
- internal/publish/publish.go:process, pkg/api/v1/exposure_types.go: an unknown health authority
  401 unknown_health_authority_id; a certificate that does not verify 401
  health_authority_verification_certificate_invalid unless the authority has
  BypassHealthAuthorityVerification (internal/authorizedapp/model/authorized_app_model.go); no
  usable key 400 bad_request; every revision or database error 400 (internal_error included);
  keys dropped one by one give 200 with code partial_failure, its go-multierror text and a
  revisionToken; every answer has 1024-2047 bytes of padding and Content-Type application/json.
- internal/verification/phaverify.go:VerifyDiagnosisCertificate, pkg/verification/utils.go:
  CalculateAllAllowedExposureKeyHMAC: ES256 with a kid, iss known, aud exact, exp and nbf with no
  leeway, reportType one of four, tekmac = HMAC-SHA256 under hmacKey of the keys sorted by their
  base64 text as sent, "key.rollingStartNumber.rollingPeriod.transmissionRisk" joined by ",", or
  the three-member form when every transmission risk is 0. No replay store: a certificate may be
  sent again until exp.
- internal/publish/model/exposure_model.go:TransformPublish, TransformExposureKey,
  internal/publish/config.go: more than MAX_KEYS_ON_PUBLISH keys (30 today, 14 or 15 in early
  releases; 14 here, the strictest) or more than MAX_SAME_START_INTERVAL_KEYS (3) with one start
  fail the whole publish; a key that is not 16 bytes, has a rollingPeriod outside 1-144, a
  transmissionRisk outside 0-8, starts in the future, or ends before now - MAX_INTERVAL_AGE_ON_PUBLISH
  (360h) is dropped ("key N cannot be imported: ...", N in the keys' sorted order).
- internal/publish/database/exposure.go:InsertAndReviseExposures, internal/revision/revision.go:
  a key stored before needs a revision token that holds it (400 missing_revision_token without a
  usable one, 400 invalid_revision_token when it fails to decrypt or lacks the key); the same
  report type again is a no-op; the answer's token holds the earlier token's keys and this call's.
- internal/export/worker.go:exportFilename, exportIndexFilename, createIndex: the bucket holds
  ROOT/index.txt whose lines are whole object names (ROOT/START-END-00001.zip), sorted, joined by
  "\\n" with no newline at the end."""
import base64, binascii, hashlib, hmac, json, os, threading, time

import jwt_es256
from verification_server import Response, padding

MAX_BODY_BYTES = 64_000
MEMBERS = ("temporaryExposureKeys", "healthAuthorityID", "verificationPayload", "hmacKey", "symptomOnsetInterval", "traveler",
           "revisionToken", "padding")
KEY_MEMBERS = ("key", "rollingStartNumber", "rollingPeriod", "transmissionRisk")
REPORT_TYPES = ("confirmed", "likely", "negative", "user-report")


def interval_number(seconds):
    return int(seconds) // 600


def answer(status, document):
    document = {name: value for name, value in document.items() if value}  # PublishResponse: every member omitempty
    return Response(status, json.dumps({**document, "padding": padding()}).encode(), headers={"x-api-version": "v1"})


def decode_base64(text):
    """pkg/base64util/decode.go:DecodeString: std or URL alphabet, padded or not."""
    text = text.replace("-", "+").replace("_", "/")
    return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)


class KeyServer:
    def __init__(self, authorities, certificate_keys, issuer, audience, bypass, max_keys, max_age_hours, same_start, faults, log):
        self.authorities, self.bypass = authorities, bypass
        self.certificate_keys, self.issuer, self.audience = certificate_keys, issuer, audience
        self.max_keys, self.max_age, self.same_start = max_keys, max_age_hours * 3600, same_start
        self.faults = list(faults)
        self.log = log
        self.lock = threading.Lock()
        self.exposures = {}  # key (bytes) → (rollingStartNumber, rollingPeriod, reportType)
        self.revision_secret = os.urandom(32)

    def handle(self, headers, raw):
        """The answer, or None for a connection dropped after the keys were saved."""
        if headers.get("X-Chaff"):
            return Response(200, json.dumps({"padding": padding()}).encode(), "text/plain; charset=utf-8")
        with self.lock:
            request, failure = self.unmarshal(headers, raw)
            # Faults are for uploads: a publish without keys (enctl's check that publish-url is a
            # key server, before it spends a verification token) gets the server's real answer.
            fault = self.faults.pop(0) if self.faults and (request or {}).get("temporaryExposureKeys") else None
            if fault == "maintenance":
                return self.logged(None, Response(429, b'{"error": "please try again later"}'))
            if failure:
                return self.logged(None, failure)
            if fault in ("500", "503"):
                return self.logged(request, Response(int(fault), b"upstream unavailable\n", "text/plain"))
            if fault == "unable_to_load":
                return self.logged(request, answer(500, {"error": "error loading health authority config: connection refused",
                                                         "code": "unable_to_load_health_authority"}))
            if fault == "internal_error":
                return self.logged(request, answer(400, {"error": "Internal Server Error", "code": "internal_error"}))
            outcome = self.process(request)
            if fault == "drop_after_save" and outcome.status == 200:
                self.logged(request, outcome, dropped=True)
                return None
            return self.logged(request, outcome)

    def logged(self, request, response, dropped=False):
        document = json.loads(response.body or b"{}") if response.body.startswith(b"{") else {}
        with open(self.log, "a") as log:
            log.write(json.dumps({"keys": (request or {}).get("temporaryExposureKeys", []), "status": response.status,
                                  "accepted": response.status == 200, "code": document.get("code", ""), "error": document.get("error", ""),
                                  "authority": (request or {}).get("healthAuthorityID"), "revisionToken": (request or {}).get("revisionToken"),
                                  "verificationPayload": (request or {}).get("verificationPayload"), "members": sorted(request or {}),
                                  "dropped": dropped, "at": time.time()}) + "\n")
        return response

    def unmarshal(self, headers, raw):
        def refused(status, message):
            code = "internal_error" if status == 500 else "bad_request"
            return None, answer(status, {"error": f"error unmarshalling API call, code: {status}: {message}", "code": code})
        if not headers.get("Content-Type", "").startswith("application/json"):
            return refused(415, "content-type is not application/json")
        if len(raw) > MAX_BODY_BYTES:
            return refused(413, "http: request body too large")
        if not raw:
            return refused(400, "body must not be empty")
        try:
            request = json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError) as failure:
            return refused(400, f"malformed json at position {getattr(failure, 'pos', 0)}")
        if not isinstance(request, dict):
            return refused(400, "malformed json")
        for name, value in request.items():
            if name not in MEMBERS:
                return refused(400, f'unknown field "{name}"')
        if not isinstance(request.get("padding", ""), str):
            return refused(400, 'invalid value "padding" at position 0')
        for key in request.get("temporaryExposureKeys") or []:
            unknown = [name for name in key if name not in KEY_MEMBERS]
            if unknown:
                return refused(400, f'unknown field "{unknown[0]}"')
        return request, None

    def process(self, request):
        authority = (request.get("healthAuthorityID") or "").lower()
        if authority not in self.authorities:
            return answer(401, {"error": f"unauthorized health authority: {authority}", "code": "unknown_health_authority_id"})
        keys = sorted(request.get("temporaryExposureKeys") or [], key=lambda key: str(key.get("key", "")))
        report_type = None
        failure = self.verify_certificate(request, keys)
        if failure is None:
            report_type = self.claims["reportType"]
        elif not self.bypass:
            return answer(401, {"error": f"unable to validate diagnosis verification: {failure}",
                                "code": "health_authority_verification_certificate_invalid"})
        if not keys:
            return answer(400, {"error": "unable to read request data: no exposure keys in publish request", "code": "bad_request"})
        if len(keys) > self.max_keys:
            return answer(400, {"error": f"unable to read request data: too many exposure keys in publish: {len(keys)}, "
                                         f"max of {self.max_keys} is allowed", "code": "bad_request"})
        now = time.time()
        kept, errors = [], []
        for index, key in enumerate(keys):
            problem = self.key_problem(key, now)
            if problem:
                errors.append(f"key {index} cannot be imported: {problem}")
            else:
                kept.append(key)
        if not kept:
            return answer(400, {"error": f"unable to read request data: {self.multierror(errors)}", "code": "bad_request"})
        starts = {}
        for key in kept:
            starts[key["rollingStartNumber"]] = starts.get(key["rollingStartNumber"], 0) + 1
        crowded = [start for start, count in starts.items() if count > self.same_start]
        if crowded:
            return answer(400, {"error": f"unable to read request data: too many overlapping keys for start interval: {crowded[0]} "
                                         f"want: <= {self.same_start}, got: {starts[crowded[0]]}", "code": "bad_request"})
        existing = [key for key in kept if decode_base64(key["key"]) in self.exposures]
        previous = self.revision_keys(request.get("revisionToken", ""))
        if existing:
            if previous is None:
                return answer(400, {"error": "no revision token, but sent existing keys", "code": "missing_revision_token"})
            if previous == "undecryptable" or any(key["key"] not in previous for key in existing):
                return answer(400, {"error": "revision token is invalid", "code": "invalid_revision_token"})
        inserted = 0
        for key in kept:
            data = decode_base64(key["key"])
            if data in self.exposures:
                continue  # the same report type again: nothing to revise
            self.exposures[data] = (key["rollingStartNumber"], key["rollingPeriod"], report_type)
            inserted += 1
        token_keys = sorted(set(previous if isinstance(previous, set) else set()) | {key["key"] for key in kept})
        result = {"revisionToken": self.revision_token(token_keys), "insertedExposures": inserted}
        if errors:
            result.update({"code": "partial_failure", "error": self.multierror(errors)})
        return answer(200, result)

    @staticmethod
    def multierror(errors):
        """go-multierror's text."""
        if len(errors) == 1:
            return f"1 error occurred:\n\t* {errors[0]}\n\n"
        return f"{len(errors)} errors occurred:\n" + "".join(f"\t* {error}\n" for error in errors) + "\n"

    def key_problem(self, key, now):
        try:
            data = decode_base64(str(key.get("key", "")))
        except (binascii.Error, ValueError):
            data = b""
        if len(data) != 16:
            return f"invalid key length, {len(data)}, must be 16"
        start, period = key.get("rollingStartNumber", 0), key.get("rollingPeriod", 0)
        if not 1 <= period <= 144:
            return f"invalid interval count, {period}, must be >= 1 && <= 144"
        oldest = interval_number(now - self.max_age)
        if start + period < oldest:
            return f"key expires before minimum window; {start} + {period} = {start + period} which is too old, must be >= {oldest}"
        if start > interval_number(now):
            return f"interval number {start} is in the future, must be <= {interval_number(now)}"
        if not 0 <= key.get("transmissionRisk", 0) <= 8:
            return f"invalid transmission risk: {key.get('transmissionRisk')}, must be >= 0 && <= 8"
        return None

    def verify_certificate(self, request, keys):
        """None when the certificate verifies (its claims in self.claims), else jwt-go's or the HMAC check's words."""
        try:
            _, claims = jwt_es256.verify(request.get("verificationPayload", ""), self.certificate_keys)
        except jwt_es256.InvalidToken as failure:
            return str(failure)
        if claims.get("iss") != self.issuer:
            return f"issuer not found: {claims.get('iss')}"
        if claims.get("aud") != self.audience:
            return f"audience mismatch for issuer: {self.issuer}"
        late = jwt_es256.standard_claims_error(claims, int(time.time()))
        if late:
            return late
        if claims.get("reportType") not in REPORT_TYPES:
            return f'invalid report type: "{claims.get("reportType")}"'
        try:
            secret, tekmac = decode_base64(request.get("hmacKey", "")), decode_base64(claims.get("tekmac", ""))
        except (binascii.Error, ValueError) as failure:
            return f"decoding HMAC: {failure}"
        forms = [",".join(f'{k["key"]}.{k["rollingStartNumber"]}.{k["rollingPeriod"]}.{k.get("transmissionRisk", 0)}' for k in keys)]
        if all(k.get("transmissionRisk", 0) == 0 for k in keys):
            forms.append(",".join(f'{k["key"]}.{k["rollingStartNumber"]}.{k["rollingPeriod"]}' for k in keys))
        if not any(hmac.compare_digest(hmac.new(secret, form.encode(), hashlib.sha256).digest(), tekmac) for form in forms):
            return "HMAC mismatch, publish request does not match disgnosis verification certificate"
        self.claims = claims
        return None

    def revision_token(self, keys):
        """Opaque, authenticated by the server's secret (revision.go seals it with AES-GCM)."""
        payload = json.dumps(keys).encode()
        return base64.b64encode(hmac.new(self.revision_secret, payload, hashlib.sha256).digest() + payload).decode()

    def revision_keys(self, token):
        """The keys a revision token holds; None for none (or not base64), "undecryptable" for a forged one."""
        if not token:
            return None
        try:
            raw = base64.b64decode(token, validate=True)
        except (binascii.Error, ValueError):
            return None
        tag, payload = raw[:32], raw[32:]
        if not hmac.compare_digest(tag, hmac.new(self.revision_secret, payload, hashlib.sha256).digest()):
            return "undecryptable"
        return set(json.loads(payload))


def bucket_object(bucket, path):
    """GET on the export bucket: ROOT/index.txt made from the archives under ROOT as createIndex
    writes it (an archive that is a dangling link is listed, as an index can name an object the
    storage does not serve yet), and any other file. None for what is not there."""
    parts = [part for part in path.split("/") if part]
    if not 1 <= len(parts) <= 2 or any(part in (".", "..") for part in parts):
        return None
    if len(parts) == 2 and parts[1] == "index.txt" and os.path.isdir(os.path.join(bucket, parts[0])):
        names = sorted(f"{parts[0]}/{name}" for name in os.listdir(os.path.join(bucket, parts[0])) if name.endswith(".zip"))
        return Response(200, "\n".join(names).encode(), "text/plain")
    file = os.path.join(bucket, *parts)
    if os.path.isfile(file):
        with open(file, "rb") as content:
            return Response(200, content.read(), "application/octet-stream")
    return None
