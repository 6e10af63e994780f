#!/usr/bin/env python3
"""health_authority.py PORT LOG [options]: a health authority's verification server
(verification_server.py), key server and export bucket (key_server.py) on 127.0.0.1:PORT, each
behaving as Google's code does (those files name the source of every behaviour), for the tests.

  --codes C,C,...           verification codes, each good once (default 12345678,23456789,34567890)
  --test-date YYYY-MM-DD    the codes' test day (default 2026-11-18)
  --omit testDate,testtype  members the verify answer leaves out
  --token-seconds N         VERIFICATION_TOKEN_DURATION (default 86400)
  --certificate-seconds N   CERTIFICATE_DURATION (default 900)
  --code-seconds N          the codes' lifetime (default 86400, a long code's)
  --rate-limit S,S,...      the next certificate requests get 429 with Retry-After S seconds ahead
  --health-authority ID     the key server's authorised app (default test-authority)
  --bypass-verification     the app's BypassHealthAuthorityVerification
  --max-keys N              MAX_KEYS_ON_PUBLISH (default 14, the strictest release's)
  --max-age-hours N         MAX_INTERVAL_AGE_ON_PUBLISH (default 360)
  --publish-faults F,F,...  the next publishes get: 500, 503, maintenance (429), unable_to_load
                            (500), internal_error (400), drop_after_save (keys saved, no answer)
  --bucket DIR              the export bucket served by GET (ROOT/index.txt made from ROOT/*.zip)

The API key is test-api-key. LOG gets one JSON line per publish (its keys, status, code, error,
authority, revisionToken, verificationPayload, members, whether the answer was dropped);
LOG.requests one per POST: path, size, X-Chaff, status.

What may stand between enctl and a key server, not the key server itself: POST /moved/v1/publish
gets a load balancer's 301 to /v1/publish, POST /proxy/v1/publish a proxy's 403 HTML page (as
Squid's ERR_ACCESS_DENIED); a mistyped path gets the verification server's mux's 404."""
import argparse, http.server, json, sys

from key_server import KeyServer, bucket_object
from verification_server import CERTIFICATE_AUDIENCE, CERTIFICATE_ISSUER, Response, VerificationServer

parser = argparse.ArgumentParser()
parser.add_argument("port", type=int)
parser.add_argument("log")
parser.add_argument("--codes", default="12345678,23456789,34567890")
parser.add_argument("--test-date", default="2026-11-18")
parser.add_argument("--omit", default="")
parser.add_argument("--token-seconds", type=int, default=86_400)
parser.add_argument("--certificate-seconds", type=int, default=900)
parser.add_argument("--code-seconds", type=int, default=86_400)
parser.add_argument("--rate-limit", default="")
parser.add_argument("--health-authority", default="test-authority")
parser.add_argument("--bypass-verification", action="store_true")
parser.add_argument("--max-keys", type=int, default=14)
parser.add_argument("--max-age-hours", type=int, default=360)
parser.add_argument("--publish-faults", default="")
parser.add_argument("--bucket")
options = parser.parse_args()


def listed(text):
    return [item for item in text.split(",") if item]


verification = VerificationServer("test-api-key", listed(options.codes), options.test_date, listed(options.omit), options.token_seconds,
                                  options.certificate_seconds, options.code_seconds, [int(s) for s in listed(options.rate_limit)])
keys = KeyServer({options.health_authority.lower()}, verification.certificate_keys, CERTIFICATE_ISSUER, CERTIFICATE_AUDIENCE,
                 options.bypass_verification, options.max_keys, options.max_age_hours, 3, listed(options.publish_faults), options.log)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def send(self, response):
        self.send_response(response.status)
        for name, value in response.headers.items():
            self.send_header(name, value)
        self.send_header("Content-Type", response.content_type)
        self.send_header("Content-Length", str(len(response.body)))
        self.end_headers()
        self.wfile.write(response.body)

    def do_GET(self):
        if self.path == "/v1/publish":
            return self.do_POST()
        found = bucket_object(options.bucket, self.path) if options.bucket else None
        self.send(found or Response(404, b"NoSuchKey\n", "text/plain"))

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.path == "/moved/v1/publish":
            response = Response(301, b"<a href=\"/v1/publish\">Moved Permanently</a>.\n", "text/html; charset=utf-8", {"Location": "/v1/publish"})
        elif self.path == "/proxy/v1/publish":
            response = Response(403, b"<html><head><title>ERROR: The requested URL could not be retrieved</title></head>"
                                     b"<body><p>Access control configuration prevents your request from being allowed at this time.</p></body></html>\n",
                                "text/html")
        elif self.path == "/v1/publish":
            response = keys.handle(self.headers, raw)
        elif self.command != "POST":
            response = Response(405, b"", "text/plain")
        else:
            response = verification.handle(self.path, self.headers, raw)
        with open(options.log + ".requests", "a") as log:
            log.write(json.dumps({"path": self.path, "size": len(raw), "chaff": self.headers.get("X-Chaff") is not None,
                                  "status": response.status if response else 0}) + "\n")
        if response is None:
            self.close_connection = True  # the keys are saved; the answer never arrives
            return
        self.send(response)

    def log_message(self, format, *arguments):
        sys.stderr.write(f"{self.command} {self.path}\n")


http.server.ThreadingHTTPServer(("127.0.0.1", options.port), Handler).serve_forever()
