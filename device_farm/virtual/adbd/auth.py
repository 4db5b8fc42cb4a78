"""ADB public-key authentication, the device side: which host keys a phone trusts, and the
check of a host's answer to an AUTH token.

adbd sends `AUTH(TOKEN, 0, <20 random bytes>)`; the host signs the token with its private key
(OpenSSL's `RSA_sign(NID_sha1, token)`: PKCS#1 v1.5 over the SHA-1 DigestInfo prefix and the
token itself, which is not hashed again) and answers `AUTH(SIGNATURE, 0, sig)`. When none of
its keys is accepted it sends `AUTH(RSAPUBLICKEY, 0, "<base64 key> user@host\\0")`, and the
user is asked whether to trust it. Keys are in Android's own format (`adbkey.pub`, the lines of
`/data/misc/adb/adb_keys`): base64 of `u32 words, u32 n0inv, modulus[256] LE, rr[256] LE,
u32 exponent`. Verification is a modular exponentiation on Python ints; no crypto library.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Union

from device_farm.errors import DeviceError

AUTH_TOKEN, AUTH_SIGNATURE, AUTH_RSAPUBLICKEY = 1, 2, 3
TOKEN_SIZE = 20
KEY_WORDS = 64  # 2048-bit modulus
_KEY_STRUCT = struct.Struct(f"<II{KEY_WORDS * 4}s{KEY_WORDS * 4}sI")
SHA1_DIGEST_INFO = bytes.fromhex("3021300906052b0e03021a05000414")
"""DER prefix of a SHA-1 DigestInfo (RFC 8017, section 9.2)."""

KeySource = Union["AdbPublicKey", str, Path]
"""A key, the text of an `adbkey.pub`/`adb_keys` file (a `str` is always text), or a `Path` to
such a file or to a directory of them (`*.pub` and `adb_keys`)."""


class BadAdbKey(DeviceError, ValueError):
    """The text is not an Android-format RSA public key."""


@dataclass(frozen=True)
class AdbPublicKey:
    """An RSA public key as adb stores it, with the `user@host` comment that follows it."""

    modulus: int
    exponent: int
    comment: str = ""

    @classmethod
    def parse(cls, line: str) -> "AdbPublicKey":
        """One `adbkey.pub` line: `<base64> [user@host]` (a trailing NUL is allowed)."""
        blob, _, comment = line.strip().strip("\x00").strip().partition(" ")
        try:
            raw = base64.b64decode(blob, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise BadAdbKey(f"not base64: {exc}") from None
        if len(raw) != _KEY_STRUCT.size:
            raise BadAdbKey(f"{len(raw)} bytes, expected {_KEY_STRUCT.size}")
        words, _n0inv, modulus, _rr, exponent = _KEY_STRUCT.unpack(raw)
        if words != KEY_WORDS:
            raise BadAdbKey(f"modulus of {words} words, expected {KEY_WORDS}")
        n = int.from_bytes(modulus, "little")
        if n.bit_length() < 2000 or exponent < 3:
            raise BadAdbKey("implausible RSA key")
        return cls(n, exponent, comment.strip())

    @property
    def size(self) -> int:
        """Modulus length in bytes (the length of a signature)."""
        return (self.modulus.bit_length() + 7) // 8

    def verifies(self, token: bytes, signature: bytes) -> bool:
        """Whether `signature` is this key's PKCS#1 v1.5 SHA-1 signature of `token`."""
        k = self.size
        if len(signature) != k:
            return False
        s = int.from_bytes(signature, "big")
        if s >= self.modulus:
            return False
        em = pow(s, self.exponent, self.modulus).to_bytes(k, "big")
        payload = SHA1_DIGEST_INFO + token
        expected = b"\x00\x01" + b"\xff" * (k - len(payload) - 3) + b"\x00" + payload
        return hmac.compare_digest(em, expected)


def parse_keys(text: str) -> list[AdbPublicKey]:
    """Every key of an `adb_keys`-style text (one per line; blank lines skipped)."""
    return [AdbPublicKey.parse(line) for line in text.splitlines() if line.strip().strip("\x00")]


def load_keys(sources: KeySource | Iterable[KeySource]) -> list[AdbPublicKey]:
    """Keys from one source or several (see KeySource); reads files, so a host starting many
    phones loads them once and hands the keys on. A `str` is key text, never a file name (a
    path check on key text could fail: a long base64 run without '/' is too long for one)."""
    if isinstance(sources, AdbPublicKey):
        return [sources]
    if isinstance(sources, str):
        return parse_keys(sources)
    if not isinstance(sources, Path):
        return [key for source in sources for key in load_keys(source)]
    if sources.is_dir():
        files = sorted(p for p in sources.iterdir() if p.is_file() and (p.suffix == ".pub" or p.name == "adb_keys"))
        return [key for f in files for key in parse_keys(f.read_text())]
    return parse_keys(sources.read_text())


class KeyRing:
    """The keys one phone trusts now: hosts holding one of `keys`, and, with `accept_new_keys`,
    a host that offers an unknown key (as if the user tapped "Always allow"; it is trusted from
    then on)."""

    def __init__(self, keys: Iterable[AdbPublicKey] = (), accept_new_keys: bool = False) -> None:
        self.accept_new_keys = accept_new_keys
        self._keys = list(keys)

    @property
    def keys(self) -> tuple[AdbPublicKey, ...]:
        return tuple(self._keys)

    def signed_by_trusted(self, token: bytes, signature: bytes) -> AdbPublicKey | None:
        return next((k for k in self._keys if k.verifies(token, signature)), None)

    def offer(self, key: AdbPublicKey) -> bool:
        """A host offers `key`: trust it if `accept_new_keys`. Offering a key proves nothing,
        so even a trusted one is refused here without accept_new_keys."""
        if self.accept_new_keys:
            if key not in self._keys:
                self._keys.append(key)
            return True
        return False
