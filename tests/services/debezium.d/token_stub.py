#!/usr/bin/env python3
"""A stand-in OAuth2 token endpoint that hands out one fixed bearer token.

Usage: token_stub.py KEY_FILE PORT_FILE

Debezium Server's http sink cannot send a fixed Authorization header (the
headers it sends come from the record's headers, JSON-encoded: a value
"Bearer k" arrives with its quotes), but its OAuth2 client-credentials
authenticator sends "Authorization: Bearer <access_token>" on every
request.  tests/services/debezium points that authenticator here: every
POST or GET answers {"access_token": <the contents of KEY_FILE>,
"token_type": "Bearer", "expires_in": 31536000}, so zx's push endpoint
sees "Authorization: Bearer <key>".  Listens on 127.0.0.1, a free port,
written to PORT_FILE once it listens.  Test and trial use only.
"""
import json
import os
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer

KEY = open(sys.argv[1]).read().strip()
PORT_FILE = sys.argv[2]
BODY = json.dumps({"access_token": KEY, "token_type": "Bearer",
                   "expires_in": 31536000}).encode()


class Handler(BaseHTTPRequestHandler):
    def _handle(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            self.rfile.read(n)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)

    do_POST = do_GET = _handle

    def log_message(self, fmt, *args):
        pass


srv = HTTPServer(("127.0.0.1", 0), Handler)
with open(PORT_FILE + ".tmp", "w") as f:
    f.write(f"{srv.server_address[1]}\n")
os.replace(PORT_FILE + ".tmp", PORT_FILE)
srv.serve_forever()
