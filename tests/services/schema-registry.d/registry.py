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
state.setdefault("config", {})

# ---- compatibility (Avro schema resolution, simplified) --------------------
# Only for a subject whose level was set (PUT /config/<subject>): the real
# registry's default is BACKWARD, this stand-in's NONE, so that the tests
# that evolve schemas freely keep working.

PRIMS = {"null", "boolean", "int", "long", "float", "double", "bytes", "string"}
# (writer, reader): the promotions of the Avro specification
PROMOTE = {("int", "long"), ("int", "float"), ("int", "double"), ("long", "float"),
           ("long", "double"), ("float", "double"), ("string", "bytes"), ("bytes", "string")}


def full_name(s, ns):
    n = s["name"]
    if "." in n:
        return n
    ns = s.get("namespace", ns)
    return f"{ns}.{n}" if ns else n


def named_types(s, ns, out):
    """Every record, enum and fixed of schema s by full name (and short name)."""
    if isinstance(s, list):
        for b in s:
            named_types(b, ns, out)
    elif isinstance(s, dict):
        t = s.get("type")
        if t in ("record", "error", "enum", "fixed"):
            fn = full_name(s, ns)
            out[fn] = s
            out.setdefault(fn.rsplit(".", 1)[-1], s)
            ns = fn.rsplit(".", 1)[0] if "." in fn else ""
        for f in s.get("fields", []) if t in ("record", "error") else []:
            named_types(f["type"], ns, out)
        for k in ("items", "values"):
            if k in s:
                named_types(s[k], ns, out)
        if isinstance(t, (dict, list)):
            named_types(t, ns, out)


def kind(s, table):
    """(kind, schema) with names and {"type": prim} forms resolved."""
    for _ in range(50):
        if isinstance(s, list):
            return "union", s
        if isinstance(s, str):
            if s in PRIMS:
                return s, s
            s = table[s] if s in table else table.get(s.rsplit(".", 1)[-1], s)
            if isinstance(s, str):
                return "unknown " + s, s
            continue
        t = s.get("type")
        if t == "error":
            return "record", s
        if isinstance(t, str) and t in PRIMS | {"record", "enum", "fixed", "array", "map"}:
            return t, s
        s = t
    return "unknown", s


def why_not(r, w, rt, wt, seen):
    """None when data written with w is read by r, else the reason."""
    rk, r = kind(r, rt)
    wk, w = kind(w, wt)
    if wk == "union":
        for b in w:
            why = why_not(r, b, rt, wt, seen)
            if why:
                return why
        return None
    if rk == "union":
        if any(why_not(b, w, rt, wt, seen) is None for b in r):
            return None
        return f"the reader's union has no branch for the writer's {wk}"
    if rk == wk and rk in PRIMS or (wk, rk) in PROMOTE:
        return None
    if rk != wk:
        return f"TYPE_MISMATCH: reader {rk}, writer {wk}"
    if rk in ("record", "enum", "fixed") and \
            r["name"].rsplit(".", 1)[-1] != w["name"].rsplit(".", 1)[-1]:
        return f"NAME_MISMATCH: reader {r['name']}, writer {w['name']}"
    if rk == "record":
        if (id(r), id(w)) in seen:
            return None
        seen.add((id(r), id(w)))
        wf = {f["name"]: f for f in w.get("fields", [])}
        for f in r.get("fields", []):
            if f["name"] in wf:
                why = why_not(f["type"], wf[f["name"]]["type"], rt, wt, seen)
                if why:
                    return f"field {f['name']}: {why}"
            elif "default" not in f:
                return f"READER_FIELD_MISSING_DEFAULT_VALUE: {f['name']}"
        return None
    if rk == "enum":
        missing = set(w.get("symbols", [])) - set(r.get("symbols", []))
        return f"MISSING_ENUM_SYMBOLS: {sorted(missing)}" if missing and \
            "default" not in r else None
    if rk == "fixed":
        return None if r.get("size") == w.get("size") else "FIXED_SIZE_MISMATCH"
    if rk == "array":
        return why_not(r["items"], w["items"], rt, wt, seen)
    if rk == "map":
        return why_not(r["values"], w["values"], rt, wt, seen)
    return f"unsupported schema ({rk})"


def incompatible(level, new, olds):
    """The first reason new cannot join a subject of the schemas olds (oldest
    first) at compatibility level (BACKWARD: new reads the last; FORWARD: the
    last reads new; FULL: both; *_TRANSITIVE: every one), or None."""
    if level == "NONE" or not olds:
        return None
    if not level.endswith("_TRANSITIVE"):
        olds = olds[-1:]
    n = json.loads(new)
    nt = {}
    named_types(n, "", nt)
    for old in olds:
        o = json.loads(old)
        ot = {}
        named_types(o, "", ot)
        if level.startswith(("BACKWARD", "FULL")):
            why = why_not(n, o, nt, ot, set())
            if why:
                return why
        if level.startswith(("FORWARD", "FULL")):
            why = why_not(o, n, ot, nt, set())
            if why:
                return why
    return None


LEVELS = {"NONE", "BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL",
          "FULL_TRANSITIVE"}


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
            m = re.fullmatch(r"/config/([^/]+)", self.path)
            if m and m.group(1) in state["config"]:
                return self.reply(200, {"compatibilityLevel": state["config"][m.group(1)]})
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
            subject = m.group(1)
            olds = [state["schemas"][i - 1] for i in state["subjects"].get(subject, [])]
            why = None if schema in olds else \
                incompatible(state["config"].get(subject, "NONE"), schema, olds)
            if why:
                return self.reply(409, {
                    "error_code": 409,
                    "message": "Schema being registered is incompatible with an earlier "
                               f"schema for subject \"{subject}\", details: [{why}]"})
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

    def do_PUT(self):
        if not self.authorised():
            return
        m = re.fullmatch(r"/config/([^/]+)", self.path)
        n = int(self.headers.get("Content-Length") or 0)
        try:
            level = json.loads(self.rfile.read(n))["compatibility"]
        except (ValueError, KeyError, TypeError):
            level = None
        if level not in LEVELS:
            return self.reply(422, {"error_code": 42203, "message": "Invalid compatibility level"})
        if not m:
            return self.reply(404, {"error_code": 40401, "message": "Not found"})
        with lock:
            state["config"][m.group(1)] = level
            save()
        self.reply(200, {"compatibility": level})


ThreadingHTTPServer(("127.0.0.1", PORT), H).serve_forever()
