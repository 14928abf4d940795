#!/usr/bin/env python3
"""A loopback webhook receiver that verifies Standard Webhooks signatures, for thumbd's webhook tests.

    webhook-receiver.py --secret whsec_... [--secret whsec_...] [--port 0] [--schemas DIR] [--print]

Prints exactly one line "PORT <n>" on stdout, then serves until killed. Signatures are checked with
the Standard Webhooks reference library (PyPI's `standardwebhooks`): a delivery is accepted when one of
the --secret keys verifies it (the library also refuses a timestamp more than 5 minutes off). With
--schemas (the project's docs/schemas), every verified body is also validated against webhook.json
(JSON Schema 2020-12, PyPI's `jsonschema`); one that breaks it is listed under "invalid".

Routes:
  POST /hook            a delivery: verified, then answered as the current mode says (204 by default);
                        a delivery that does not verify is answered 401 and counted as rejected
  POST /_mode?status=S&count=N&delay=D
                        the next N deliveries (default: all) are answered S after D seconds (a delay
                        beyond the sender's timeout is a time-out); without arguments: back to 204 at once
  POST /_validate       a body to validate against the schemas, answered {"errors": [...]}
  GET  /_received       {"accepted": [{"id", "type", "job_id", "external_id", "source_url", "metadata",
                        "urls"}...], "rejected": n, "posts": n, "answered": {status: n},
                        "invalid": [{"id", "errors"}...]}
"""

import argparse
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

from standardwebhooks.webhooks import Webhook, WebhookVerificationError

lock = threading.Lock()
state = {"accepted": [], "rejected": 0, "posts": 0, "answered": {}, "mode": None, "invalid": []}
validator = None


def load_schemas(folder):
    """A validator of webhook bodies, with event-payload.json resolvable from webhook.json."""
    import jsonschema
    from referencing import Registry, Resource

    schemas = [json.load(open(f"{folder}/{name}")) for name in ("webhook.json", "event-payload.json")]
    for schema in schemas:
        jsonschema.Draft202012Validator.check_schema(schema)
    registry = Registry().with_resources((s["$id"], Resource.from_contents(s)) for s in schemas)
    return jsonschema.Draft202012Validator(schemas[0], registry=registry)


def schema_errors(body):
    if validator is None:
        return ["the receiver was started without --schemas"]
    return sorted(f"{'/'.join(map(str, e.absolute_path)) or '(body)'}: {e.message}"
                  for e in validator.iter_errors(body))


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    webhooks = []
    show = False

    def log_message(self, *args):
        pass

    def answer(self, status, body=b""):
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if urlparse(self.path).path == "/_received":
            with lock:
                body = json.dumps(
                    {k: state[k] for k in ("accepted", "rejected", "posts", "answered", "invalid")})
            self.answer(200, body.encode())
        else:
            self.answer(404)

    def do_POST(self):
        url = urlparse(self.path)
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if url.path == "/_mode":
            query = parse_qs(url.query)
            with lock:
                if "status" in query or "delay" in query:
                    state["mode"] = {
                        "status": int(query.get("status", ["204"])[0]),
                        "count": int(query.get("count", ["-1"])[0]),
                        "delay": float(query.get("delay", ["0"])[0]),
                    }
                else:
                    state["mode"] = None
            self.answer(204)
            return
        if url.path == "/_validate":
            self.answer(200, json.dumps({"errors": schema_errors(json.loads(body))}).encode())
            return
        if url.path != "/hook":
            self.answer(404)
            return
        headers = {k.lower(): v for k, v in self.headers.items()}
        verified = None
        for webhook in self.webhooks:
            try:
                verified = webhook.verify(body, headers)
                break
            except WebhookVerificationError:
                continue
        errors = schema_errors(verified) if verified is not None and validator is not None else []
        if verified is not None and Handler.show:
            shown = "".join(f"{k}: {v}\n" for k, v in self.headers.items())
            print(f"{self.command} {self.path} {self.request_version}\n{shown}\n{body.decode()}\n"
                  f"({'valid' if not errors else errors})\n", flush=True)
        with lock:
            state["posts"] += 1
            if errors:
                state["invalid"].append({"id": headers.get("webhook-id"), "errors": errors})
            if verified is None:
                state["rejected"] += 1
                status, delay = 401, 0
            else:
                mode = state["mode"]
                status, delay = 204, 0
                if mode is not None and mode["count"] != 0:
                    status, delay = mode["status"], mode["delay"]
                    if mode["count"] > 0:
                        mode["count"] -= 1
                if 200 <= status < 300 and delay == 0:
                    data = verified["data"]
                    state["accepted"].append({
                        "id": headers["webhook-id"], "type": verified["type"], "job_id": data["job_id"],
                        "external_id": data["external_id"], "source_url": data["source_url"],
                        "metadata": json.dumps(data.get("metadata"), sort_keys=True),
                        "urls": [v.get("url") for v in data.get("variants", [])],
                    })
            state["answered"][str(status)] = state["answered"].get(str(status), 0) + 1
        if delay:
            time.sleep(delay)
        try:
            self.answer(status)
        except OSError:
            pass


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--secret", action="append", required=True)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--schemas")
    parser.add_argument("--print", action="store_true", help="print each verified delivery (headers and body) to stdout")
    args = parser.parse_args()
    global validator
    if args.schemas:
        validator = load_schemas(args.schemas)
    Handler.webhooks = [Webhook(secret) for secret in args.secret]
    Handler.show = args.print
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    print(f"PORT {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
