#!/usr/bin/env python3
"""A loopback forwarding proxy in front of an S3 server that fails on request, for thumbd's storage tests.

    python3 s3-faults.py --upstream http://127.0.0.1:PORT [--port 0]

Binds 127.0.0.1, prints exactly one line "PORT <n>" on stdout, then serves until killed. Standard
library only.

Every request outside /_faults is forwarded unchanged to the upstream: method, path and query, every
header (Host included: the client signed for this proxy's host:port, and the upstream checks the
signature against the Host it receives) and the body. The upstream's answer comes back as it was.

Control routes (never forwarded):
  POST /_faults         a JSON fault, or a list of them, appended to the queue:
                          {"status": 503, "code": "SlowDown", "count": 2, "method": "PUT", "path": "abc"}
                        the next `count` (default 1) requests whose method is `method` (default: any)
                        and whose path contains `path` (default: any) get that status and an S3 XML
                        error document with that code, without reaching the upstream;
                          {"reset": true, "count": 1, ...}
                        reads the request, then closes the connection with a TCP reset and no answer;
                          {"delay": 8, "count": 1, ...}
                        holds the request that long, then forwards it.
                        `count` -1: every matching request until cleared.
  GET  /_faults/log     JSON list of the requests seen, in order: {"method", "path", "headers" (every
                        header but Authorization, names as sent), "signed" (an Authorization header was
                        there), "outcome" ("forwarded 200", "fault 503", "reset")}
  POST /_faults/clear   drops the queued faults and the log
"""

import argparse
import http.client
import json
import socket
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

CLIENT_GONE = (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, TimeoutError)
# Headers about this hop only, which a proxy does not pass on.
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "proxy-connection"}


class State:
    def __init__(self):
        self.lock = threading.Lock()
        self.faults = []
        self.log = []

    def take_fault(self, method, path):
        """The first queued fault matching the request, its count used once; None when there is none."""
        with self.lock:
            for fault in self.faults:
                if fault.get("method") not in (None, method):
                    continue
                if fault.get("path") is not None and fault["path"] not in path:
                    continue
                count = fault.get("count", 1)
                if count == 0:
                    continue
                if count > 0:
                    fault["count"] = count - 1
                return dict(fault)
            return None

    def record(self, entry):
        with self.lock:
            self.log.append(entry)


def error_document(code, message):
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f"<Error><Code>{code}</Code><Message>{message}</Message>"
        "<RequestId>thumbd-s3-faults</RequestId></Error>"
    ).encode()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def version_string(self):
        return "thumbd-s3-faults"

    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass

    def handle_one_request(self):
        try:
            super().handle_one_request()
        except CLIENT_GONE:
            self.close_connection = True

    def do_GET(self):
        self.dispatch()

    def do_HEAD(self):
        self.dispatch()

    def do_PUT(self):
        self.dispatch()

    def do_POST(self):
        self.dispatch()

    def do_DELETE(self):
        self.dispatch()

    def read_body(self):
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def reply(self, status, body, content_type="application/json", extra=()):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in extra:
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def dispatch(self):
        state = self.server.state
        if self.path.startswith("/_faults"):
            self.control(state)
            return
        body = self.read_body()
        entry = {
            "method": self.command,
            "path": self.path,
            "headers": {k: v for k, v in self.headers.items() if k.lower() != "authorization"},
            "signed": "Authorization" in self.headers,
        }
        fault = state.take_fault(self.command, self.path)
        if fault and fault.get("reset"):
            entry["outcome"] = "reset"
            state.record(entry)
            # SO_LINGER 0: close() sends a TCP reset instead of a polite FIN.
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            self.connection.close()
            return
        if fault and fault.get("delay"):
            time.sleep(float(fault["delay"]))
            fault = None
        if fault:
            status = int(fault.get("status", 503))
            entry["outcome"] = f"fault {status}"
            state.record(entry)
            code = fault.get("code", "InternalError")
            self.reply(
                status, error_document(code, "injected by s3-faults.py"), "application/xml",
                extra=[("Retry-After", str(fault["retryAfter"]))] if "retryAfter" in fault else (),
            )
            return
        try:
            status, reason, headers, answer = self.forward(body)
        except OSError as error:
            entry["outcome"] = f"upstream error {error}"
            state.record(entry)
            self.reply(502, error_document("BadGateway", str(error)), "application/xml")
            return
        entry["outcome"] = f"forwarded {status}"
        state.record(entry)
        self.send_response(status, reason)
        for name, value in headers:
            if name.lower() not in HOP_BY_HOP and name.lower() not in ("content-length", "server", "date"):
                self.send_header(name, value)
        if self.command == "HEAD":
            length = next((v for n, v in headers if n.lower() == "content-length"), "0")
            self.send_header("Content-Length", length)
        else:
            self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(answer)

    def forward(self, body):
        upstream = self.server.upstream
        connection = http.client.HTTPConnection(upstream.hostname, upstream.port, timeout=30)
        try:
            # The client's own headers, Host first among them, exactly as sent: nothing added.
            connection.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
            for name, value in self.headers.items():
                if name.lower() not in HOP_BY_HOP:
                    connection.putheader(name, value)
            connection.endheaders(body if body else None)
            response = connection.getresponse()
            answer = response.read()
            return response.status, response.reason, response.getheaders(), answer
        finally:
            connection.close()

    def control(self, state):
        body = self.read_body()
        if self.command == "GET" and self.path == "/_faults/log":
            with state.lock:
                text = json.dumps(state.log)
            self.reply(200, text.encode())
        elif self.command == "POST" and self.path == "/_faults/clear":
            with state.lock:
                state.faults.clear()
                state.log.clear()
            self.reply(200, b'{"cleared": true}')
        elif self.command == "POST" and self.path == "/_faults":
            try:
                value = json.loads(body or b"{}")
            except ValueError as error:
                self.reply(400, json.dumps({"error": str(error)}).encode())
                return
            faults = value if isinstance(value, list) else [value]
            with state.lock:
                state.faults.extend(faults)
            self.reply(200, json.dumps({"queued": len(faults)}).encode())
        else:
            self.reply(404, b'{"error": "unknown control route"}')


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address, upstream):
        super().__init__(address, Handler)
        self.upstream = upstream
        self.state = State()

    def handle_error(self, request, client_address):
        if isinstance(sys.exc_info()[1], CLIENT_GONE):
            return
        super().handle_error(request, client_address)


def main():
    parser = argparse.ArgumentParser(description="fault-injecting S3 proxy for thumbd tests")
    parser.add_argument("--upstream", required=True, help="the S3 server: http://host:port")
    parser.add_argument("--port", type=int, default=0, help="TCP port; 0 picks a free one")
    args = parser.parse_args()
    upstream = urlsplit(args.upstream)
    if upstream.scheme != "http" or not upstream.hostname or not upstream.port:
        parser.error(f"--upstream {args.upstream!r} is not http://host:port")
    server = Server(("127.0.0.1", args.port), upstream)
    print(f"PORT {server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
