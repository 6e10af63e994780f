#!/usr/bin/env python3
"""hostile_key_server.py PORT: a key server on 127.0.0.1:PORT that misbehaves, for the tests.

GET /forever/index.txt  an index that never ends (no Content-Length; lines as fast as the socket takes)
GET /slow/index.txt     one byte every 0.5 s, forever
GET /loop/index.txt     302 to itself, forever
GET /big/index.txt      a one-line index naming big.zip; GET /big/big.zip streams zeros forever"""
import http.server, socketserver, sys, time


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def do_GET(self):
        try:
            if self.path == "/loop/index.txt":
                self.send_response(302)
                self.send_header("Location", "/loop/index.txt")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(200)
            self.end_headers()
            if self.path == "/forever/index.txt":
                line = b"exports/" + b"x" * 100 + b".zip\n"
                while True:
                    self.wfile.write(line * 100)
            elif self.path == "/slow/index.txt":
                while True:
                    self.wfile.write(b"e")
                    self.wfile.flush()
                    time.sleep(0.5)
            elif self.path == "/big/index.txt":
                self.wfile.write(b"big.zip\n")
            elif self.path == "/big/big.zip":
                chunk = b"\0" * 65536
                while True:
                    self.wfile.write(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def log_message(self, format, *args):
        sys.stderr.write("%s\n" % (format % args))


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


Server(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
