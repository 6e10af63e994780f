#!/usr/bin/env python3
"""health_authority.py PORT LOG FAILURES [OMITTED]: a health authority's verification server and
key server on 127.0.0.1:PORT, speaking the protocols of protocol.md §5, for the tests. FAILURES is
a comma-separated list of HTTP statuses the first publishes get (500: unavailable; 429: rate
limited, Retry-After 3600; 400: the certificate expired), or 0 for none. OMITTED is a
comma-separated list of members the verify answer leaves out (testDate, testtype).

POST /api/verify       X-API-Key "test-api-key"; code "12345678" gives a token, others code_invalid
POST /api/certificate  the token and the HMAC of the keys give a certificate bound to that HMAC
POST /v1/publish       refused as FAILURES says; then accepted only if the HMAC of the published
                       keys under hmacKey is the one the certificate binds; an accepted publish
                       answers revisionToken "revision-N" (N counts accepted publishes)
GET  /index.txt        an empty list of export files
Every request's path, size and X-Chaff header go to LOG.requests; a request with X-Chaff is a
decoy, answered 200 {} and otherwise ignored. Every publish request is appended to LOG as a JSON line: {"keys": [...], "accepted": bool,
"authority": ..., "revisionToken": the one the request carried, "members": the request's member names}."""
import base64, hashlib, hmac, http.server, json, sys

PORT, LOG = int(sys.argv[1]), sys.argv[2]
FAILURES = [int(status) for status in sys.argv[3].split(",") if status != "0"]
OMITTED = sys.argv[4].split(",") if len(sys.argv) > 4 else []
ACCEPTED = [0]
API_KEY, CODE, TOKEN = "test-api-key", "12345678", "token-1"
CERTIFIED = {}


def key_hmac(secret, keys):
    parts = sorted(f'{k["key"]}.{k["rollingStartNumber"]}.{k["rollingPeriod"]}.{k.get("transmissionRisk", 0)}' for k in keys)
    return base64.b64encode(hmac.new(secret, ",".join(parts).encode(), hashlib.sha256).digest()).decode()


class Handler(http.server.BaseHTTPRequestHandler):
    def answer(self, status, body, headers={}):
        data = json.dumps(body).encode()
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/index.txt":
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()
        else:
            self.answer(404, {"error": "not found"})

    def do_POST(self):
        raw = self.rfile.read(int(self.headers["Content-Length"]))
        chaff = self.headers.get("X-Chaff") is not None
        with open(LOG + ".requests", "a") as log:
            log.write(json.dumps({"path": self.path, "size": len(raw), "chaff": chaff}) + "\n")
        if chaff:
            return self.answer(200, {})
        body = json.loads(raw)
        if self.path in ("/api/verify", "/api/certificate") and self.headers.get("X-API-Key") != API_KEY:
            return self.answer(401, {"error": "bad API key", "errorCode": "unauthorized"})
        if self.path == "/api/verify":
            if body.get("code") != CODE:
                return self.answer(400, {"error": "no such code", "errorCode": "code_invalid"})
            answer = {"testtype": "confirmed", "testDate": "2026-11-18", "symptomDate": "", "token": TOKEN}
            return self.answer(200, {name: value for name, value in answer.items() if name not in OMITTED})
        if self.path == "/api/certificate":
            if body.get("token") != TOKEN:
                return self.answer(400, {"error": "bad token", "errorCode": "token_invalid"})
            certificate = "certificate-" + hashlib.sha256(body["ekeyhmac"].encode()).hexdigest()[:16]
            CERTIFIED[certificate] = body["ekeyhmac"]
            return self.answer(200, {"certificate": certificate})
        if self.path == "/v1/publish":
            keys = body.get("temporaryExposureKeys", [])
            accepted, headers = False, {}
            if FAILURES:
                status = FAILURES.pop(0)
                answer = {500: {"error": "temporarily unavailable", "code": "internal"},
                          429: {"error": "too many requests", "code": "rate_limited"},
                          400: {"error": "the verification certificate has expired", "code": "certificate_expired"}}[status]
                if status == 429:
                    headers = {"Retry-After": "3600"}
            elif CERTIFIED.get(body.get("verificationPayload")) != key_hmac(base64.b64decode(body["hmacKey"]), keys):
                status, answer = 400, {"error": "the certificate does not match the keys", "code": "hmac_mismatch"}
            else:
                accepted = True
                ACCEPTED[0] += 1
                status, answer = 200, {"insertedExposures": len(keys), "revisionToken": f"revision-{ACCEPTED[0]}"}
            with open(LOG, "a") as log:
                log.write(json.dumps({"keys": keys, "accepted": accepted, "authority": body.get("healthAuthorityID"),
                                      "revisionToken": body.get("revisionToken"), "members": sorted(body)}) + "\n")
            return self.answer(status, answer, headers)
        self.answer(404, {"error": "not found"})


http.server.ThreadingHTTPServer(("127.0.0.1", PORT), Handler).serve_forever()
