#!/usr/bin/env python3
"""A loopback HTTP origin that misbehaves on request, for thumbd's fetch tests.

    python3 origin.py --root DIR [--host 127.0.0.1] [--port 0] [--tls-cert FILE --tls-key FILE]

Binds 127.0.0.1 (or --host: the chaos driver serves a fleet of network namespaces), prints exactly one line "PORT <n>" on stdout, then serves until killed. With
--tls-cert and --tls-key it speaks HTTPS only (tests use a self-signed certificate a client must refuse).
Standard library only, so tests need nothing beyond python3.

Routes (all GET unless noted):
  /files/<name>                     DIR/<name>; 404 when missing; never outside DIR. Sends an ETag
                                    (hash of the bytes) and Last-Modified; answers a matching
                                    If-None-Match with 304, and a single `Range: bytes=A-B` (or A-)
                                    with 206 and Content-Range, as web servers and S3 do
  /norange/<name>                   /files/<name>, but answers every Range with the whole file (200)
  /_bytes/<path...>                 {"bytes": n}: body bytes sent for <path> (query ignored)
  /status/<code>                    that status with a short body
  /flaky/<n>/<name>                 503 for the first n requests of this path, then the file
  /slow/<name>[?chunk=B&delay=S]    the file in small chunks (4096 B) with 0.5 s pauses
  /unique/<name>?<anything>         the file with the query appended after its end: other bytes for each
                                    URL (no two URLs render alike), the same picture
  /retry-after/<seconds>/<name>     first request 429 + Retry-After, then the file
  /huge[?nolength=1]                claims 10 GiB (or no length at all), streams zeros forever
  /lying-length/<name>              Content-Length larger than the body, then closes
  /redirect?to=<url>                302 to that URL, whatever it is
  /redirect-loop/<n>                302 to /redirect-loop/<n+1>, forever
  /reset/<name>                     headers and half the body, then a TCP reset
  /gzip-bomb                        Content-Encoding: gzip, ~1 MB that inflates to 1 GiB of zeros
  /presigned/<name>?X-Amz-Date=D&X-Amz-Expires=S&X-Amz-Signature=...
                                    the file while D + S seconds (SigV4's yyyymmddThhmmssZ) have not
                                    passed, then 403 with S3's "Request has expired" error; 403 too
                                    without a signature. The signature itself is not checked
  /_count/<path...>                 {"count": n}: how many GETs <path> got (query ignored)
  /_counts                          every counter, as JSON
  /_connections                     {"count": n}: TCP connections accepted so far (keep-alive checks)
  POST /_reset                      clears the counters (and with them flaky/retry-after state)
"""

import argparse
import calendar
import email.utils
import hashlib
import io
import json
import mimetypes
import os
import socket
import ssl
import struct
import sys
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

HUGE_LENGTH = 10 * 1024**3  # what /huge claims to send
BOMB_SIZE = 1024**3  # what /gzip-bomb inflates to
ZEROS = bytes(64 * 1024)

# mimetypes does not know every image type the worker cares about.
EXTRA_TYPES = {
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".heic": "image/heic",
    ".heif": "image/heif",
    ".avif": "image/avif",
    ".webp": "image/webp",
    ".png": "image/png",
}

# Connection errors from a client that hung up (or refused our certificate): expected in these tests,
# never worth a traceback.
CLIENT_GONE = (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, TimeoutError, ssl.SSLError)


class Counters:
    """GETs per request path; flaky and retry-after routes derive their state from it."""

    def __init__(self):
        self._lock = threading.Lock()
        self._counts = {}

    def hit(self, path):
        with self._lock:
            n = self._counts.get(path, 0) + 1
            self._counts[path] = n
            return n

    def get(self, path):
        with self._lock:
            return self._counts.get(path, 0)

    def snapshot(self):
        with self._lock:
            return dict(self._counts)

    def sent(self, path, n):
        with self._lock:
            self._counts["bytes:" + path] = self._counts.get("bytes:" + path, 0) + n

    def clear(self):
        with self._lock:
            self._counts.clear()


_bomb_lock = threading.Lock()
_bomb = None


def gzip_bomb():
    """1 GiB of zeros as one gzip member, built once on first use in well under a second.

    Compressing a whole GiB takes zlib about 8 s, too long for a client's timeout. After a
    Z_FULL_FLUSH the compressor forgets its history, so every further MiB of zeros compresses
    to the same bytes: compress two MiB for real, repeat the second, and write the gzip
    trailer (CRC-32 and length of the whole GiB) ourselves.
    """
    global _bomb
    with _bomb_lock:
        if _bomb is None:
            chunk = bytes(1024 * 1024)
            chunks = BOMB_SIZE // len(chunk)
            z = zlib.compressobj(9, zlib.DEFLATED, 31)  # wbits 31 = gzip container
            first = z.compress(chunk) + z.flush(zlib.Z_FULL_FLUSH)
            repeat = z.compress(chunk) + z.flush(zlib.Z_FULL_FLUSH)
            final_block = z.flush(zlib.Z_FINISH)[:-8]  # drop zlib's trailer for 2 MiB
            crc = 0
            for _ in range(chunks):
                crc = zlib.crc32(chunk, crc)
            trailer = struct.pack("<II", crc, BOMB_SIZE & 0xFFFFFFFF)
            _bomb = first + repeat * (chunks - 1) + final_block + trailer
        return _bomb


class Handler(BaseHTTPRequestHandler):
    # HTTP/1.1 so clients can keep connections alive, as real origins let them.
    protocol_version = "HTTP/1.1"
    def version_string(self):
        return "thumbd-test-origin"

    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass  # quiet: tests read stdout for the PORT line only

    # ---- plumbing -------------------------------------------------------------------------

    def handle_one_request(self):
        try:
            super().handle_one_request()
        except CLIENT_GONE:
            self.close_connection = True

    def send_body(self, status, body, content_type="text/plain; charset=utf-8", headers=()):
        self.send_response(status)
        bodiless = status in (204, 304)  # HTTP forbids a body (and its length) on these
        if not bodiless:
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        if not bodiless:
            self.wfile.write(body)

    def send_text(self, status, text, headers=()):
        self.send_body(status, (text + "\n").encode(), headers=headers)

    def send_json(self, status, obj):
        self.send_body(status, (json.dumps(obj) + "\n").encode(), "application/json")

    def resolve(self, name):
        """DIR/<name> as a real path, or None when missing or outside DIR."""
        name = unquote(name)
        if not name or "\0" in name:
            return None
        root = self.server.root
        path = os.path.normpath(os.path.join(root, name))  # links placed in root by tests are allowed; ".." is not
        if os.path.commonpath([root, path]) != root or not os.path.isfile(path):
            return None
        return path

    def file_headers(self, path, length=None):
        ext = os.path.splitext(path)[1].lower()
        ctype = EXTRA_TYPES.get(ext) or mimetypes.guess_type(path)[0] or "application/octet-stream"
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(os.path.getsize(path) if length is None else length))

    def load_file(self, name):
        """(path, bytes) of DIR/<name>; None after answering 404 when it is missing or outside DIR."""
        path = self.resolve(name)
        if path is None:
            self.send_text(404, "not found")
            return None
        with open(path, "rb") as f:
            return path, f.read()

    def start_file(self, path, length=None, headers=()):
        """Status 200 and the file's headers (Content-Length may be a lie, for the lying route)."""
        self.send_response(200)
        self.file_headers(path, length)
        for key, value in headers:
            self.send_header(key, value)
        self.end_headers()

    def send_file(self, name, ranges=True):
        loaded = self.load_file(name)
        if loaded is None:
            return
        path, data = loaded
        etag = '"%s"' % hashlib.sha256(data).hexdigest()[:20]
        validators = [
            ("ETag", etag),
            ("Last-Modified", email.utils.formatdate(os.path.getmtime(path), usegmt=True)),
        ]
        if etag in (self.headers.get("If-None-Match") or ""):
            self.send_body(304, b"", headers=validators)
            return
        wanted = (self.headers.get("Range") or "").strip().lower()
        if ranges and wanted.startswith("bytes=") and "," not in wanted:
            first, _, last = wanted[6:].partition("-")
            if first.isdigit() and (last.isdigit() or not last) and int(first) < len(data):
                start, end = int(first), min(len(data) - 1, int(last) if last else len(data) - 1)
                if start <= end:
                    self.send_response(206)
                    self.file_headers(path, end - start + 1)
                    self.send_header("Content-Range", f"bytes {start}-{end}/{len(data)}")
                    for key, value in validators:
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(data[start:end + 1])
                    self.server.counters.sent(urlsplit(self.path).path, end - start + 1)
                    return
        self.start_file(path, headers=validators)
        self.wfile.write(data)
        self.server.counters.sent(urlsplit(self.path).path, len(data))

    def route_unique(self, name):
        loaded = self.load_file(name)
        if loaded is None:
            return
        path, data = loaded
        body = data + b"\n" + urlsplit(self.path).query.encode()
        self.send_body(200, body, content_type="image/jpeg")

    def read_request_body(self):
        # Drain any body so the next request on this connection parses cleanly.
        length = int(self.headers.get("Content-Length") or 0)
        if length > 0:
            self.rfile.read(length)

    # ---- routes ---------------------------------------------------------------------------

    def do_POST(self):
        self.read_request_body()
        if urlsplit(self.path).path == "/_reset":
            self.server.counters.clear()
            self.send_json(200, {"ok": True})
        else:
            self.send_text(404, "not found")

    def do_GET(self):
        url = urlsplit(self.path)
        path = url.path
        query = parse_qs(url.query)
        counters = self.server.counters

        # Control endpoints are not counted, so reading a counter does not change it.
        if path.startswith("/_count/"):
            self.send_json(200, {"count": counters.get("/" + path[len("/_count/"):])})
            return
        if path == "/_counts":
            self.send_json(200, counters.snapshot())
            return
        if path.startswith("/_bytes/"):
            self.send_json(200, {"bytes": counters.get("bytes:/" + path[len("/_bytes/"):])})
            return
        if path == "/_connections":
            self.send_json(200, {"count": self.server.connections})
            return

        n = counters.hit(path)
        parts = path.lstrip("/").split("/", 1)
        route, rest = parts[0], (parts[1] if len(parts) > 1 else "")

        if route == "files":
            self.send_file(rest)
        elif route == "norange":
            self.send_file(rest, ranges=False)
        elif route == "status":
            self.route_status(rest)
        elif route == "flaky":
            self.route_flaky(rest, n)
        elif route == "slow":
            self.route_slow(rest, query)
        elif route == "unique":
            self.route_unique(rest)
        elif route == "retry-after":
            self.route_retry_after(rest, n)
        elif route == "huge" and not rest:
            self.route_huge(query)
        elif route == "lying-length":
            self.route_lying_length(rest)
        elif route == "redirect" and not rest:
            self.route_redirect(query)
        elif route == "redirect-loop":
            self.route_redirect_loop(rest)
        elif route == "reset":
            self.route_reset(rest)
        elif route == "gzip-bomb" and not rest:
            self.route_gzip_bomb()
        elif route == "presigned":
            self.route_presigned(rest, query)
        else:
            self.send_text(404, "not found")

    def route_presigned(self, rest, query):
        def s3_error(code, message):
            body = (f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code>'
                    f'<Message>{message}</Message></Error>').encode()
            self.send_body(403, body, content_type="application/xml")

        date, expires = query.get("X-Amz-Date", [""])[0], query.get("X-Amz-Expires", [""])[0]
        if not query.get("X-Amz-Signature") or not expires.isdigit():
            s3_error("AccessDenied", "Query-string authentication requires the Signature parameter")
            return
        try:
            signed = calendar.timegm(time.strptime(date, "%Y%m%dT%H%M%SZ"))
        except ValueError:
            s3_error("AuthorizationQueryParametersError", "X-Amz-Date must be in the ISO8601 Long Format")
            return
        if time.time() > signed + int(expires):
            s3_error("AccessDenied", "Request has expired")
            return
        self.send_file(rest)

    def route_status(self, rest):
        try:
            code = int(rest)
        except ValueError:
            code = 0
        if not 200 <= code <= 599:
            self.send_text(400, "bad status code")
            return
        self.send_text(code, f"status {code}")

    def route_flaky(self, rest, n):
        count, _, name = rest.partition("/")
        if not count.isdigit() or not name:
            self.send_text(400, "usage: /flaky/<n>/<name>")
        elif n <= int(count):
            self.send_text(503, f"flaky: failure {n} of {count}")
        else:
            self.send_file(name)

    def route_retry_after(self, rest, n):
        seconds, _, name = rest.partition("/")
        if not seconds.isdigit() or not name:
            self.send_text(400, "usage: /retry-after/<seconds>/<name>")
        elif n == 1:
            self.send_text(429, "slow down", headers=[("Retry-After", seconds)])
        else:
            self.send_file(name)

    def route_slow(self, rest, query):
        loaded = self.load_file(rest)
        if loaded is None:
            return
        path, data = loaded
        chunk = int(query.get("chunk", ["4096"])[0])
        delay = float(query.get("delay", ["0.5"])[0])
        self.start_file(path)
        self.wfile.flush()
        for i in range(0, len(data), max(1, chunk)):
            self.wfile.write(data[i : i + chunk])
            self.wfile.flush()
            if i + chunk < len(data):
                time.sleep(delay)

    def route_huge(self, query):
        # Zeros with an image type: the client has to enforce its own size limit.
        self.send_response(200)
        self.send_header("Content-Type", "image/jpeg")
        if query.get("nolength"):
            self.close_connection = True  # body ends only when the connection does
            self.send_header("Connection", "close")
        else:
            self.send_header("Content-Length", str(HUGE_LENGTH))
        self.end_headers()
        try:
            while True:
                self.wfile.write(ZEROS)
        except CLIENT_GONE:
            self.close_connection = True

    def route_lying_length(self, rest):
        loaded = self.load_file(rest)
        if loaded is None:
            return
        path, data = loaded
        self.start_file(path, length=len(data) * 2 + 1024, headers=[("Connection", "close")])
        self.wfile.write(data)
        self.close_connection = True  # the promised remainder never comes

    def route_redirect(self, query):
        target = query.get("to", [""])[0]
        if not target or "\r" in target or "\n" in target:
            self.send_text(400, "usage: /redirect?to=<url>")
            return
        self.send_text(302, f"see {target}", headers=[("Location", target)])

    def route_redirect_loop(self, rest):
        if not rest.isdigit():
            self.send_text(400, "usage: /redirect-loop/<n>")
            return
        target = f"/redirect-loop/{int(rest) + 1}"
        self.send_text(302, f"see {target}", headers=[("Location", target)])

    def route_reset(self, rest):
        loaded = self.load_file(rest)
        if loaded is None:
            return
        path, data = loaded
        self.start_file(path)
        self.wfile.write(data[: len(data) // 2])
        self.wfile.flush()
        # SO_LINGER with a zero timeout turns close() into a TCP RST instead of a clean FIN.
        # Every file object on the socket must be closed for the descriptor to really close.
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.close_connection = True
        self.rfile.close()
        self.wfile.close()
        self.connection.close()
        self.wfile = io.BytesIO()  # the base class still flushes and closes wfile afterwards

    def route_gzip_bomb(self):
        self.send_body(
            200,
            gzip_bomb(),
            content_type="image/jpeg",
            headers=[("Content-Encoding", "gzip")],
        )


class Server(ThreadingHTTPServer):
    daemon_threads = True  # a stuck client must not keep the process alive on exit
    request_queue_size = 128  # tests open many connections at once

    def __init__(self, address, root):
        super().__init__(address, Handler)
        self.root = os.path.realpath(root)
        self.counters = Counters()
        self.connections = 0
        self._connections_lock = threading.Lock()

    def get_request(self):
        request = super().get_request()
        with self._connections_lock:
            self.connections += 1
        return request

    def handle_error(self, request, client_address):
        if isinstance(sys.exc_info()[1], CLIENT_GONE):
            return
        super().handle_error(request, client_address)


def main():
    parser = argparse.ArgumentParser(description="loopback HTTP origin for thumbd tests")
    parser.add_argument("--root", required=True, help="directory served under /files/")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="TCP port; 0 picks a free one")
    parser.add_argument("--tls-cert", help="PEM certificate: serve HTTPS")
    parser.add_argument("--tls-key", help="PEM private key of --tls-cert")
    args = parser.parse_args()
    if not os.path.isdir(args.root):
        parser.error(f"--root {args.root!r} is not a directory")

    server = Server((args.host, args.port), args.root)
    if args.tls_cert:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(args.tls_cert, args.tls_key)
        # Handshakes happen in the per-connection thread, so a client that refuses the certificate
        # cannot stall the accept loop.
        server.socket = context.wrap_socket(
            server.socket, server_side=True, do_handshake_on_connect=False
        )
    print(f"PORT {server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
