#!/usr/bin/env python3
"""A tiny HTTP receiver that records what Debezium Server's http sink sends.

Usage: http_receiver.py OUT.jsonl [PORT [STATUS_FILE]]

Listens on 127.0.0.1:PORT (0 or none: a free port, printed on stdout as
PORT=<p> once it listens) and appends one JSON line per request to OUT.jsonl:
  {"method": "POST", "path": "/...", "headers": {name: value, ...},
   "body": "<the body as text>"}
and answers 200 with an empty JSON object, or with the status code written
in STATUS_FILE when that file exists (e.g. 500, to see the sink retry).
For the corpus in tests/corpus/debezium and for trying the http sink by hand;
zx's own gateway is the real target.
"""
import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

OUT = sys.argv[1]
PORT = int(sys.argv[2]) if len(sys.argv) > 2 else 0
STATUS_FILE = sys.argv[3] if len(sys.argv) > 3 else None
LOCK = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def _handle(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        rec = {
            "method": self.command,
            "path": self.path,
            "headers": {k: v for k, v in self.headers.items()},
            "body": body.decode("utf-8", "replace"),
        }
        status = 200
        if STATUS_FILE and os.path.exists(STATUS_FILE):
            try:
                status = int(open(STATUS_FILE).read().strip() or 200)
            except ValueError:
                status = 500
        rec["status"] = status
        with LOCK, open(OUT, "a") as f:
            f.write(json.dumps(rec) + "\n")
        reply = b"{}" if status < 300 else b'{"error":"test receiver says no"}'
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    do_POST = do_PUT = do_GET = _handle

    def log_message(self, fmt, *args):
        pass


srv = ThreadingHTTPServer(("127.0.0.1", PORT), Handler)
print(f"PORT={srv.server_address[1]}", flush=True)
srv.serve_forever()
