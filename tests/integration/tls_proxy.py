"""
A TLS-terminating TCP proxy for tests (asyncio in a thread of its own): it
accepts TLS on 127.0.0.1:<port> with a server certificate, and passes the
clear bytes to a plain upstream (host, port) and back.  It reads the
requests' heads on their way (HTTP/1.1 with Content-Length bodies), records
each one's method, path and Authorization header, and, when given `auth`,
answers 401 and closes the connection on a request without that exact
Authorization header (the upstream never sees it).

make_pki(dir) makes a throwaway CA and server certificates with Python's
`cryptography`.
"""

import asyncio
import datetime
import ipaddress
import os
import ssl
import threading

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


def _name(cn):
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _write(path, key, cert):
    if key is not None:
        with open(path + ".key", "wb") as f:
            f.write(key.private_bytes(serialization.Encoding.PEM,
                                      serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption()))
    with open(path + ".pem", "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))


def make_pki(d, hosts=(("good", ["127.0.0.1", "localhost"]), ("wronghost", ["zx.invalid"]))):
    """In folder d: ca.pem (a CA of its own), and for each (name, names) of
    hosts name.pem and name.key, a server certificate for those DNS names
    and IP addresses signed by that CA.  Returns {"ca": path, name:
    (cert path, key path), ...}."""
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (x509.CertificateBuilder()
          .subject_name(_name("zx test CA")).issuer_name(_name("zx test CA"))
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - datetime.timedelta(hours=1))
          .not_valid_after(now + datetime.timedelta(days=2))
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True,
                                       crl_sign=True, content_commitment=False,
                                       key_encipherment=False, data_encipherment=False,
                                       key_agreement=False, encipher_only=False,
                                       decipher_only=False), critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()),
                         critical=False)
          .sign(ca_key, hashes.SHA256()))
    out = {"ca": os.path.join(d, "ca.pem")}
    _write(os.path.join(d, "ca"), None, ca)
    for name, names in hosts:
        key = ec.generate_private_key(ec.SECP256R1())
        alt = []
        for n in names:
            try:
                alt.append(x509.IPAddress(ipaddress.ip_address(n)))
            except ValueError:
                alt.append(x509.DNSName(n))
        cert = (x509.CertificateBuilder()
                .subject_name(_name(names[0])).issuer_name(ca.subject)
                .public_key(key.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(hours=1))
                .not_valid_after(now + datetime.timedelta(days=1))
                .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                .add_extension(x509.SubjectAlternativeName(alt), critical=False)
                .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]),
                               critical=False)
                .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
                    ca_key.public_key()), critical=False)
                .sign(ca_key, hashes.SHA256()))
        base = os.path.join(d, name)
        _write(base, key, cert)
        out[name] = (base + ".pem", base + ".key")
    return out


class TLSProxy:
    """start() then .port; stop() at the end.  Attributes read by tests:
    seen [(method, path, authorization)], upstream_connections (how many
    connections reached the upstream: none before a handshake succeeds),
    refused (requests answered 401)."""

    def __init__(self, upstream, cert, key, auth=None):
        host, port = upstream.rsplit(":", 1)
        self.upstream = (host, int(port))
        self.ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.ctx.load_cert_chain(cert, key)
        self.auth = auth
        self.seen = []
        self.upstream_connections = 0
        self.refused = 0
        self.port = None
        self._loop = asyncio.new_event_loop()
        self._thread = None

    def start(self):
        ready = threading.Event()

        def run():
            asyncio.set_event_loop(self._loop)
            # a failed handshake (the client refusing the certificate) is
            # expected here: not worth a traceback on stderr
            self._loop.set_exception_handler(lambda loop, ctx: None)
            self._server = self._loop.run_until_complete(
                asyncio.start_server(self._handle, "127.0.0.1", 0, ssl=self.ctx,
                                     ssl_handshake_timeout=10))
            self.port = self._server.sockets[0].getsockname()[1]
            ready.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()
        assert ready.wait(10), "the TLS proxy did not start"
        return self

    def stop(self):
        async def close():
            self._server.close()
            await self._server.wait_closed()
        try:
            asyncio.run_coroutine_threadsafe(close(), self._loop).result(10)
        except Exception:
            pass
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    async def _handle(self, creader, cwriter):
        try:
            ureader, uwriter = await asyncio.open_connection(*self.upstream)
        except OSError:
            cwriter.close()
            return
        self.upstream_connections += 1
        up = asyncio.ensure_future(self._requests(creader, cwriter, uwriter))
        down = asyncio.ensure_future(self._copy(ureader, cwriter))
        await asyncio.wait([up, down], return_when=asyncio.FIRST_COMPLETED)
        for t in (up, down):
            t.cancel()
        for w in (cwriter, uwriter):
            try:
                w.close()
            except Exception:
                pass

    async def _copy(self, reader, writer):
        while True:
            b = await reader.read(65536)
            if not b:
                return
            writer.write(b)
            await writer.drain()

    async def _requests(self, reader, cwriter, uwriter):
        """Client to upstream, one request head at a time."""
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
                return
            lines = head.decode("latin-1").split("\r\n")
            method, path = (lines[0].split(" ") + ["", ""])[:2]
            hdrs = {}
            for l in lines[1:]:
                if ":" in l:
                    k, v = l.split(":", 1)
                    hdrs[k.strip().lower()] = v.strip()
            self.seen.append((method, path, hdrs.get("authorization")))
            if self.auth is not None and hdrs.get("authorization") != self.auth:
                self.refused += 1
                body = b'{"error":"unauthorized (the TLS proxy)","status":401}'
                cwriter.write(b"HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\n"
                              b"WWW-Authenticate: Basic realm=\"zx\"\r\n"
                              b"Connection: close\r\nContent-Length: %d\r\n\r\n%s"
                              % (len(body), body))
                await cwriter.drain()
                return
            uwriter.write(head)
            if "chunked" in hdrs.get("transfer-encoding", "").lower():
                await self._copy(reader, uwriter)       # no more heads to read
                return
            n = int(hdrs.get("content-length") or 0)
            while n > 0:
                b = await reader.read(min(n, 65536))
                if not b:
                    return
                uwriter.write(b)
                n -= len(b)
            await uwriter.drain()
