#!/usr/bin/env python3
"""A stand-in for a Confluent-compatible schema registry (see
tests/services/README.md, "schema-registry"): a mock, because no real
registry can run on zx's machines.  Usage: registry.py PORT DIR."""
import base64
import json
import os
import re
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORT, DIR = int(sys.argv[1]), sys.argv[2]
STORE = os.path.join(DIR, "schemas.json")
USER, PASSWORD = os.environ.get("ZX_REGISTRY_USER"), os.environ.get("ZX_REGISTRY_PASSWORD")
lock = threading.Lock()
try:
    with open(STORE) as f:
        state = json.load(f)
except FileNotFoundError:
    state = {"schemas": [], "subjects": {}}


def save():
    tmp = STORE + ".tmp"
    with open(tmp, "w") as f:
        json.dump(state, f)
    os.replace(tmp, STORE)


class H(BaseHTTPRequestHandler):
    def log_message(self, fmt, *args):
        sys.stderr.write("registry: " + (fmt % args) + "\n")

    def reply(self, code, obj):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def authorised(self):
        if not USER:
            return True
        want = "Basic " + base64.b64encode(f"{USER}:{PASSWORD or ''}".encode()).decode()
        if self.headers.get("Authorization") == want:
            return True
        self.reply(401, {"error_code": 401, "message": "Unauthorized"})
        return False

    def do_GET(self):
        if not self.authorised():
            return
        m = re.fullmatch(r"/schemas/ids/(\d+)", self.path)
        with lock:
            if m:
                i = int(m.group(1))
                if 1 <= i <= len(state["schemas"]):
                    return self.reply(200, {"schema": state["schemas"][i - 1]})
                return self.reply(404, {"error_code": 40403, "message": f"Schema {i} not found"})
            if self.path == "/subjects":
                return self.reply(200, sorted(state["subjects"]))
            m = re.fullmatch(r"/subjects/([^/]+)/versions/latest", self.path)
            if m and m.group(1) in state["subjects"]:
                ids = state["subjects"][m.group(1)]
                return self.reply(200, {"subject": m.group(1), "version": len(ids),
                                        "id": ids[-1], "schema": state["schemas"][ids[-1] - 1]})
        self.reply(404, {"error_code": 40401, "message": "Not found"})

    def do_POST(self):
        if not self.authorised():
            return
        m = re.fullmatch(r"/subjects/([^/]+)/versions", self.path)
        n = int(self.headers.get("Content-Length") or 0)
        try:
            schema = json.loads(self.rfile.read(n))["schema"]
            json.loads(schema)
        except (ValueError, KeyError, TypeError):
            return self.reply(422, {"error_code": 42201, "message": "Invalid schema"})
        if not m:
            return self.reply(404, {"error_code": 40401, "message": "Not found"})
        with lock:
            if schema in state["schemas"]:
                i = state["schemas"].index(schema) + 1
            else:
                state["schemas"].append(schema)
                i = len(state["schemas"])
            ids = state["subjects"].setdefault(m.group(1), [])
            if i not in ids:
                ids.append(i)
            save()
        self.reply(200, {"id": i})


ThreadingHTTPServer(("127.0.0.1", PORT), H).serve_forever()
