"""Hostile input to the phone's own servers: a regex that backtracks without end keeps only
its own shell busy (the phones of a process share one event loop), an invalid one is
toybox's `bad regex` and status 2, and malformed uiautomator2 JSON-RPC calls get JSON-RPC
errors over real HTTP through an adb forward, never a closed connection."""

from __future__ import annotations

import json
import threading
import time

import adbutils
import httpx
import pytest
import uiautomator2 as u2

from device_farm.virtual import PhoneLoop, VirtualPhone

# `(a|aa)+$` on a line of a's ending in b backtracks exponentially in Python's `re` and in
# `regex` alike; 36 a's keep either busy for many seconds.
HOSTILE = "echo " + "a" * 36 + "b | grep -E '(a|aa)+$'"


def test_a_backtracking_grep_does_not_freeze_the_other_phones_of_its_loop(adb_server):
    with PhoneLoop() as loop:
        phones = [VirtualPhone().start(loop) for _ in range(2)]
        try:
            hostile, calm = (adb_server.client.device(adb_server.connect_device(p.address)) for p in phones)
            answer: dict[str, object] = {}

            def attack() -> None:
                started = time.monotonic()
                answer["result"] = hostile.shell2(HOSTILE, v2=True, timeout=60)
                answer["took"] = time.monotonic() - started

            attacker = threading.Thread(target=attack)
            attacker.start()
            time.sleep(0.5)  # the grep is matching now
            started = time.monotonic()
            assert calm.shell("echo ok", timeout=30) == "ok"
            assert time.monotonic() - started < 1.0
            attacker.join(timeout=60)
            result = answer["result"]
            assert isinstance(result, adbutils.ShellReturn)
            assert result.returncode == 2
            assert result.stderr.startswith("grep: regex '(a|aa)+$': too slow to match")
            assert answer["took"] < 10
        finally:
            for phone in phones:
                adb_server.client.disconnect(phone.address)
                phone.stop()


@pytest.mark.parametrize("line, message", [
    ("echo x | grep -E '('", "grep: bad regex '(': parentheses not balanced"),
    ("echo x | grep '['", "grep: bad regex '[': brackets ([ ]) not balanced"),
    ("echo x | egrep '**'", "grep: bad regex '**': repetition-operator operand invalid"),
    ("echo x | grep -E 'x{256}'", "grep: bad regex 'x{256}': invalid repetition count(s)"),
    ("echo x | grep 'x\\'", "grep: bad regex 'x\\': trailing backslash (\\)"),
    ("echo x | grep", "grep: no REGEX"),
])
def test_an_invalid_regex_is_toybox_status_2(virtual_phone, line, message):
    result = virtual_phone.device.shell2(line, v2=True)
    assert (result.returncode, result.stdout, result.stderr) == (2, "", message + "\n")
    assert virtual_phone.device.shell("echo x | grep -E 'x|y'") == "x"


def test_yes_alone_ends_at_the_output_cap_and_the_phone_keeps_answering(virtual_phone):
    """`yes` runs until its reader goes; with the host reading it ends at the shell's output
    cap instead of growing the phone's memory, and the phone serves others meanwhile."""
    device = virtual_phone.device
    result: dict[str, object] = {}
    reader = threading.Thread(target=lambda: result.update(r=device.shell2("yes", v2=True, timeout=60)))
    reader.start()
    assert device.shell("echo ok", timeout=30) == "ok"
    reader.join(timeout=60)
    answer = result["r"]
    assert isinstance(answer, adbutils.ShellReturn)
    assert 1000 < len(answer.stdout) <= 16 * 1024 * 1024 and set(answer.stdout) == {"y", "\n"}
    assert answer.returncode == 141 and answer.stderr == ""
    long_count = device.shell2("seq 100000000 | wc -l", v2=True, timeout=60)
    assert long_count.returncode == 0 and 0 < int(long_count.stdout) < 100000000


@pytest.fixture
def rpc(virtual_phone):
    """An httpx client on the uiautomator2 server through `adb forward tcp:N tcp:9008`."""
    port = virtual_phone.device.forward_port(9008)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10) as client:
            yield client
    finally:
        virtual_phone.device.forward_remove(f"tcp:{port}", raise_non_found=False)


def call(method: str, params: object = None, ident: object = 1) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": ident, "method": method, "params": params}).encode()


@pytest.mark.parametrize("body, code", [
    (b"{not json", -32700),
    (b'{"jsonrpc": "2.0", "id": 1, "method": "deviceInfo", "params": NaN}', -32700),
    (b"[" * 100_000, -32700),
    (b"\xff\xfe", -32700),
    (b'{"jsonrpc": "2.0", "id": 1, "method": "deviceInfo", "id": 1' + b"0" * 5000 + b"}", -32700),
    (b"42", -32600),
    (b'"deviceInfo"', -32600),
    (b'{"jsonrpc": "2.0", "id": 1}', -32600),
    (b'{"jsonrpc": "2.0", "id": 1, "method": 7}', -32600),
    (b'{"jsonrpc": "2.0", "id": 1e400, "method": "deviceInfo"}', -32600),
    (b'{"jsonrpc": "2.0", "id": {"a": 1}, "method": "deviceInfo"}', -32600),
    (b"[]", -32600),
    (json.dumps([json.loads(call("deviceInfo"))] * 65).encode(), -32600),
    (call("noSuchMethod"), -32601),
    (call("click", "x"), -32602),
    (call("click", ["a", "b"]), -32602),
    (call("pressKey", [1]), -32602),
    (call("deviceInfo", {"bogus": 1}), -32602),
    (call("setText", [{"text": "Clock"}]), -32602),
    # numbers JSON can write but no int or float parameter holds (1e999 is infinite)
    (b'{"jsonrpc": "2.0", "id": 1, "method": "click", "params": [1e999, 2]}', -32602),
    (b'{"jsonrpc": "2.0", "id": 1, "method": "click", "params": [2, -1e999]}', -32602),
    (call("click", [1e300, 2]), -32602),
    (call("click", [2 ** 40, 2]), -32602),
    (call("click", [True, 2]), -32602),
    (b'{"jsonrpc": "2.0", "id": 1, "method": "swipe", "params": [1, 2, 1e999, 4, 10]}', -32602),
    (b'{"jsonrpc": "2.0", "id": 1, "method": "injectInputEvent", "params": [1, 1e999, 2, 0]}', -32602),
    (b'{"jsonrpc": "2.0", "id": 1, "method": "click", "params": [{"text": "x"}, 1e999]}', -32602),
    (b'{"jsonrpc": "2.0", "id": 1, "method": "waitForExists", "params": [{"text": "x"}, 1e999]}', -32602),
])
def test_malformed_json_rpc_gets_a_json_rpc_error(virtual_phone, rpc, body, code):
    reply = rpc.post("/jsonrpc/0", content=body, headers={"Content-Type": "application/json"})
    assert reply.status_code == 200
    answer = reply.json()  # strict JSON: no NaN or Infinity in it
    assert answer["jsonrpc"] == "2.0" and answer["error"]["code"] == code
    assert answer["error"]["message"] in ("JSON parse error", "invalid request", "method not found",
                                          "method parameters invalid")
    # the same connection keeps serving
    again = rpc.post("/jsonrpc/0", content=call("deviceInfo"))
    assert again.json()["result"]["displayWidth"] == 1080
    assert u2.connect(virtual_phone.device).info["displayWidth"] == 1080


def test_a_batch_answers_each_call_and_huge_ids_are_echoed(rpc):
    huge = 10 ** 300
    batch = [json.loads(call("deviceInfo", ident=huge)), json.loads(call("noSuch", ident="b")), 5]
    answers = rpc.post("/jsonrpc/0", content=json.dumps(batch)).json()
    assert [a["id"] for a in answers] == [huge, "b", None]
    assert answers[0]["result"]["sdkInt"] == 34
    assert [a.get("error", {}).get("code") for a in answers] == [None, -32601, -32600]


def test_a_notification_answers_nothing_and_an_empty_post_is_refused(rpc):
    note = rpc.post("/jsonrpc/0", content=b'{"jsonrpc": "2.0", "method": "deviceInfo"}')
    assert (note.status_code, note.content) == (200, b"")
    empty = rpc.post("/jsonrpc/0", content=b"")
    assert (empty.status_code, empty.text) == (500, "Invalid http post data!")
