"""AppiumSource in a DevicePool, against a real Appium 3 server running the fake driver."""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import httpx
import pytest

from device_farm.appium.device import AppiumDevice
from device_farm.appium.source import AppiumSource
from device_farm.errors import DeviceOffline, DeviceUnavailable
from device_farm.pool.pool import DevicePool, Requirement
from device_farm.sources import DeviceCandidate, DeviceSource


def _source(server, app: Path, *names: str) -> AppiumSource:
    return AppiumSource(server.url, [{**server.capabilities(app), "appium:deviceName": n} for n in names])


def test_two_leases_get_two_sessions_and_release_them(appium_server, fake_app: Path, tmp_path: Path) -> None:
    source = _source(appium_server, fake_app, "phone-a", "phone-b")
    assert isinstance(source, DeviceSource)
    pool = DevicePool([source], state_dir=tmp_path / "pool").start()
    inside = threading.Barrier(2, timeout=20)
    seen: dict[str, str] = {}

    def work(name: str) -> None:
        with pool.lease(timeout=20, holder=name) as device:
            assert isinstance(device, AppiumDevice)
            seen[device.serial] = device.driver.session_id
            assert any(e.text == "Save" for e in device.observe().elements)
            inside.wait()  # both leases held at once

    threads = [threading.Thread(target=work, args=(f"worker {i}",)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(seen) == ["phone-a", "phone-b"]
    for session in seen.values():  # each lease quit its session
        assert httpx.get(f"{appium_server.url}/session/{session}/source").status_code == 404
    rows = {r.candidate.serial: r for r in pool.status()}
    assert rows["phone-a"].candidate.key == f"appium/{appium_server.url.split('//')[1]}/phone-a"
    assert rows["phone-a"].health is not None and rows["phone-a"].health.healthy
    assert rows["phone-b"].holder is None and rows["phone-b"].record.faults == 0
    pool.close()


def test_a_session_the_server_refuses_is_counted_as_a_fault(appium_server, tmp_path: Path) -> None:
    source = _source(appium_server, tmp_path / "no-such-app.xml", "broken")
    pool = DevicePool([source], state_dir=tmp_path / "pool").start()
    with pytest.raises(DeviceUnavailable):
        with pool.lease(timeout=1, require=Requirement(serial="broken")):
            pass
    (row,) = pool.status(probe=False)
    assert row.record.faults >= 1 and "create a session" in row.record.last_fault
    assert row.holder is None


def test_a_dead_endpoint_is_reported_not_raised(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    source = AppiumSource(url, {"platformName": "Android", "appium:udid": "R5CT1"})
    with pytest.raises(DeviceOffline):
        source.discover()
    candidate = DeviceCandidate(key="appium/x/R5CT1", serial="R5CT1", source=source.name)
    health = source.probe(candidate)
    assert health.state == "offline" and not health.healthy
    assert source.reconnect(candidate) is False
    pool = DevicePool([source], state_dir=tmp_path / "pool").start()
    assert pool.status() == []
    assert "device_offline" in pool.source_errors[source.name]
    with pytest.raises(DeviceUnavailable, match="device_offline"):
        with pool.lease(timeout=0.3):
            pass
