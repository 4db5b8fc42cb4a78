"""Optional ADB authentication on the virtual phone, with the real adb server signing with its
own keys (`$ANDROID_USER_HOME/adbkey`, `ADB_VENDOR_KEYS`): a trusted host gets online, an
unknown one stays `unauthorized` unless the phone accepts new keys; plus the signature check
itself against signatures made by OpenSSL, and the protocol steps on a raw connection."""

from __future__ import annotations

import base64
import logging
import os
import shutil
import subprocess
import time
from pathlib import Path

import adbutils
import pytest

from device_farm.adb.server import AdbServer
from device_farm.virtual import VirtualPhone
from device_farm.virtual.adbd.auth import (
    _KEY_STRUCT, AUTH_RSAPUBLICKEY, AUTH_SIGNATURE, AUTH_TOKEN, KEY_WORDS, TOKEN_SIZE, AdbPublicKey, BadAdbKey,
    load_keys,
)
from device_farm.virtual.adbd.packets import A_AUTH, A_CNXN, A_OKAY, A_OPEN, A_VERSION, Packet
from tests.device_farm.virtual.raw_adb import RawAdb, keygen


@pytest.fixture(scope="module")
def keyed_adb(tmp_path_factory: pytest.TempPathFactory):
    """A private adb server whose own key (in its temporary HOME) is known in advance."""
    home = tmp_path_factory.mktemp("keyed-adb-home")
    pub = keygen(home / ".android" / "adbkey")
    server = AdbServer(home=home)
    server.start()
    try:
        yield server, pub
    finally:
        server.stop()


def state_of(adb: AdbServer, address: str, want: str, timeout: float = 10) -> str:
    """The serial's state on the server once it is `want` (or whatever it is at the timeout)."""
    deadline = time.monotonic() + timeout
    state = "absent"
    while time.monotonic() < deadline:
        state = next((d.state for d in adb.client.list() if d.serial == address), "absent")
        if state == want:
            break
        time.sleep(0.05)
    return state


def connect(adb: AdbServer, phone: VirtualPhone) -> None:
    try:
        adb.client.connect(phone.address, timeout=10)
    except adbutils.AdbError:
        pass  # adb connect reports an unauthorized device as a failure; the state says more


def test_a_host_with_the_configured_key_gets_online(keyed_adb):
    adb, pub = keyed_adb
    with VirtualPhone(adb_keys=pub) as phone:
        try:
            serial = adb.connect_device(phone.address)
            assert adb.client.device(serial).shell("echo authorized") == "authorized"
            assert phone.trusted_keys() == load_keys(pub)
        finally:
            adb.client.disconnect(phone.address)


def test_a_keys_directory_is_read_too(keyed_adb, tmp_path):
    adb, pub = keyed_adb
    keygen(tmp_path / "keys" / "other")
    shutil.copy(pub, tmp_path / "keys" / "laptop.pub")
    with VirtualPhone(adb_keys=tmp_path / "keys") as phone:
        try:
            assert len(phone.trusted_keys()) == 2
            serial = adb.connect_device(phone.address)
            assert adb.client.device(serial).shell("getprop ro.secure") == "1"
        finally:
            adb.client.disconnect(phone.address)


def test_an_unknown_host_key_stays_unauthorized(keyed_adb, tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="device_farm.virtual")
    adb, _ = keyed_adb
    someone_else = keygen(tmp_path / "someone" / "adbkey")
    with VirtualPhone(adb_keys=someone_else) as phone:
        try:
            connect(adb, phone)
            assert state_of(adb, phone.address, "unauthorized") == "unauthorized"
            result = subprocess.run(
                [adbutils.adb_path(), "-H", adb.host, "-P", str(adb.port), "-s", phone.address, "shell", "echo hi"],
                capture_output=True, stdin=subprocess.DEVNULL, timeout=30)
            assert result.returncode != 0 and b"unauthorized" in result.stderr
            assert phone.trusted_keys() == load_keys(someone_else)
            assert any("refused unknown host key" in r.getMessage() for r in caplog.records)
        finally:
            adb.client.disconnect(phone.address)


def test_accepting_new_keys_trusts_the_offered_key_from_then_on(keyed_adb):
    adb, pub = keyed_adb
    with VirtualPhone(accept_new_keys=True) as phone:
        try:
            assert phone.trusted_keys() == []
            serial = adb.connect_device(phone.address)
            assert adb.client.device(serial).shell("echo accepted") == "accepted"
            assert [k.modulus for k in phone.trusted_keys()] == [k.modulus for k in load_keys(pub)]
        finally:
            adb.client.disconnect(phone.address)


def test_the_host_signs_with_adb_vendor_keys(tmp_path, monkeypatch):
    vendor = keygen(tmp_path / "vendor" / "vendor_key")
    monkeypatch.setenv("ADB_VENDOR_KEYS", str(vendor.with_suffix("")))
    (tmp_path / "home").mkdir()
    server = AdbServer(home=tmp_path / "home")  # its own adbkey is created at start, unknown to the phone
    server.start()
    try:
        with VirtualPhone(adb_keys=vendor) as phone:
            serial = server.connect_device(phone.address)
            assert server.client.device(serial).shell("echo vendor") == "vendor"
    finally:
        server.stop()


def test_without_keys_there_is_no_auth(virtual_phone):
    assert virtual_phone.phone.trusted_keys() == []
    assert virtual_phone.device.shell("echo open") == "open"


# --- the protocol on a raw connection, and the signature check ------------------------


def openssl_sign(private_key: Path, token: bytes, tmp_path: Path) -> bytes:
    (tmp_path / "token").write_bytes(token)
    subprocess.run(["openssl", "pkeyutl", "-sign", "-inkey", str(private_key), "-pkeyopt", "digest:sha1",
                    "-in", str(tmp_path / "token"), "-out", str(tmp_path / "sig")], check=True, capture_output=True)
    return (tmp_path / "sig").read_bytes()


needs_openssl = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")


@needs_openssl
def test_token_signature_and_public_key_steps(tmp_path):
    pub = keygen(tmp_path / "host" / "adbkey")
    stranger = keygen(tmp_path / "stranger" / "adbkey")
    with VirtualPhone(adb_keys=pub) as phone:
        host = RawAdb(phone, handshake=False)
        host.send(Packet(A_CNXN, A_VERSION, 4096, b"host::\x00"))
        challenge = host.recv()
        assert (challenge.command, challenge.arg0, len(challenge.data)) == (A_AUTH, AUTH_TOKEN, TOKEN_SIZE)
        host.send(Packet(A_OPEN, 1, 0, b"shell:echo too early\x00"))  # ignored before authorization
        wrong = openssl_sign(stranger.with_suffix(""), challenge.data, tmp_path)
        host.send(Packet(A_AUTH, AUTH_SIGNATURE, 0, wrong))
        again = host.recv()
        assert again.command == A_AUTH and again.arg0 == AUTH_TOKEN and again.data != challenge.data
        host.send(Packet(A_AUTH, AUTH_RSAPUBLICKEY, 0, pub.read_bytes() + b"\x00"))  # offering is not proof
        host.send(Packet(A_AUTH, AUTH_SIGNATURE, 0, openssl_sign(pub.with_suffix(""), again.data, tmp_path)))
        online = host.recv()
        assert online.command == A_CNXN and online.data.startswith(b"device::")
        host.send(Packet(A_OPEN, 2, 0, b"shell:echo now\x00"))
        assert host.recv().command == A_OKAY
        host.close()


@needs_openssl
def test_signature_check_against_openssl(tmp_path):
    pub = keygen(tmp_path / "adbkey")
    key = AdbPublicKey.parse(pub.read_text())
    token = os.urandom(TOKEN_SIZE)
    sig = openssl_sign(pub.with_suffix(""), token, tmp_path)
    assert key.verifies(token, sig)
    assert not key.verifies(os.urandom(TOKEN_SIZE), sig)
    assert not key.verifies(token, sig[:-1] + bytes([sig[-1] ^ 1]))
    assert not key.verifies(token, sig[:-1])


def test_malformed_keys_are_rejected(tmp_path):
    for text in ("not base64 at all!", "QUFBQQ== user@host", ""):
        with pytest.raises(BadAdbKey):
            AdbPublicKey.parse(text)
    (tmp_path / "adb_keys").write_text("garbage\n")
    with pytest.raises(BadAdbKey):
        VirtualPhone(adb_keys=tmp_path / "adb_keys").start()


def test_key_text_with_a_long_run_without_slashes_loads(tmp_path):
    """Key text is never taken for a file name: a base64 run longer than a file name may be
    (here the zero bytes of a sparse modulus and of rr) must not make the load fail."""
    modulus = (1 << 2047) | 1
    raw = _KEY_STRUCT.pack(KEY_WORDS, 0, modulus.to_bytes(KEY_WORDS * 4, "little"), bytes(KEY_WORDS * 4), 65537)
    text = base64.b64encode(raw).decode() + " user@host"
    assert max(len(run) for run in text.split("/")) > 255
    assert load_keys(text) == [AdbPublicKey(modulus, 65537, "user@host")]
    with VirtualPhone(adb_keys=text) as phone:
        assert phone.trusted_keys() == [AdbPublicKey(modulus, 65537, "user@host")]
    pub = keygen(tmp_path / "adbkey")
    assert load_keys(pub.read_text()) == load_keys(pub)
    with pytest.raises(BadAdbKey):  # a file name must be a Path
        load_keys(str(pub))
