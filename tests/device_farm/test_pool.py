"""DevicePool over real virtual phones and real adb servers: exclusive leases (threads and
processes), a killed holder's lease released, transport drops, quarantine and re-probe,
devices from two adb servers in one pool."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from device_farm.adb.server import AdbServer
from device_farm.adb.source import AdbSource
from device_farm.virtual.source import VirtualSource
from device_farm.errors import DeviceOffline, DeviceUnavailable, ElementNotFound, UiServerDown
from device_farm.pool.pool import DevicePool, QuarantinePolicy, Requirement


@pytest.fixture
def virtual_pool(tmp_path: Path):
    """A pool over fresh virtual phones; ``virtual_pool(n, **pool kwargs)``."""
    pools: list[DevicePool] = []

    def make(count: int, **kwargs) -> tuple[DevicePool, VirtualSource]:
        source = VirtualSource(count, home=tmp_path / f"adb-home-{len(pools)}")
        pool = DevicePool([source], state_dir=tmp_path / "pool", **kwargs).start()
        pools.append(pool)
        return pool, source

    yield make
    for pool in pools:
        pool.close()


def _row(pool: DevicePool, serial: str):
    return next(r for r in pool.status(probe=False) if r.candidate.serial == serial)


def test_leases_are_exclusive_across_threads(virtual_pool):
    pool, _ = virtual_pool(3)
    holders: dict[str, int] = {}
    overlaps: list[str] = []
    leases = []
    guard = threading.Lock()

    def worker(n: int) -> None:
        for _ in range(15):
            with pool.lease(timeout=20, holder=f"worker {n}") as device:
                with guard:
                    if device.serial in holders:
                        overlaps.append(device.serial)
                    holders[device.serial] = n
                    leases.append(device.serial)
                assert device.shell("echo hi").output.strip() == "hi"
                with guard:
                    del holders[device.serial]

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert overlaps == []
    assert len(leases) == 90 and len(set(leases)) == 3  # every phone got used
    assert pool.held() == []
    assert all(r.holder is None for r in pool.status(probe=False))


def test_lease_gives_up_with_device_unavailable_when_all_are_held(virtual_pool):
    pool, _ = virtual_pool(1)
    with pool.lease(timeout=5) as device:
        assert _row(pool, device.serial).holder.pid == os.getpid()
        started = time.monotonic()
        with pytest.raises(DeviceUnavailable, match="1 held") as caught:
            with pool.lease(timeout=0.3):
                pass
        assert 0.3 <= time.monotonic() - started < 5  # gave up after the timeout, no hang
        assert caught.value.code == "device_offline" and caught.value.infra
    with pool.lease(timeout=1) as again:
        assert again.serial == device.serial


_HOLDER_SCRIPT = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from device_farm.adb.source import AdbSource
    from device_farm.pool.pool import DevicePool, Requirement
    pool = DevicePool([AdbSource(sys.argv[1])], state_dir=Path(sys.argv[2]))
    with pool.lease(timeout=20, require=Requirement(serial=sys.argv[3]), holder="child") as device:
        print("LEASED", device.serial, flush=True)
        time.sleep(120)
""")


def test_lease_held_by_another_process_is_released_when_it_is_killed(virtual_phone, tmp_path):
    address = f"{virtual_phone.adb.host}:{virtual_phone.adb.port}"
    child = subprocess.Popen([sys.executable, "-c", _HOLDER_SCRIPT, address, str(tmp_path), virtual_phone.serial],
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().split() == ["LEASED", virtual_phone.serial]
        pool = DevicePool([AdbSource(address)], state_dir=tmp_path)
        only_this = Requirement(serial=virtual_phone.serial)
        with pytest.raises(DeviceUnavailable):
            with pool.lease(timeout=0.5, require=only_this):
                pass
        holder = _row(pool, virtual_phone.serial).holder
        assert (holder.pid, holder.name) == (child.pid, "child")
        child.send_signal(signal.SIGKILL)
        child.wait(10)
        with pool.lease(timeout=5, require=only_this) as device:
            assert device.shell("echo mine").output.strip() == "mine"
        assert _row(pool, virtual_phone.serial).holder is None
    finally:
        child.kill()
        child.wait()


def test_phone_gone_mid_lease_raises_offline_quickly_and_is_quarantined(virtual_pool):
    pool, source = virtual_pool(1, quarantine=QuarantinePolicy(backoff_s=60))
    with pytest.raises(DeviceOffline):
        with pool.lease(timeout=5) as device:
            source.phones[0].stop()
            started = time.monotonic()
            try:
                device.shell("echo hi", timeout=10)
            finally:
                assert time.monotonic() - started < 2.0
    assert pool.held() == []
    row = _row(pool, device.serial)
    assert row.holder is None and row.record.quarantined and row.record.faults == 1
    assert row.record.last_fault.startswith("device_offline")
    with pytest.raises(DeviceUnavailable, match="1 quarantined"):
        with pool.lease(timeout=0.3):
            pass


def test_quarantined_phone_is_reprobed_after_backoff_and_back_in_service(virtual_pool):
    pool, source = virtual_pool(1, quarantine=QuarantinePolicy(backoff_s=0.5))
    phone = source.phones[0]
    with pytest.raises(DeviceOffline):
        with pool.lease(timeout=5) as device:
            phone.stop()
            device.shell("echo hi")
    assert _row(pool, device.serial).record.quarantined
    # Still down when the backoff ends: the re-probe fails and the backoff doubles.
    with pytest.raises(DeviceUnavailable):
        with pool.lease(timeout=1.0):
            pass
    record = _row(pool, device.serial).record
    assert record.quarantined and record.quarantines == 2 and record.faults == 2
    assert pool.quarantine.backoff(record.quarantines) == 2 * pool.quarantine.backoff(1)
    phone.start()  # same port: the phone is back, adb must re-attach it
    # On a loaded machine adb may not re-attach at the first re-probe after the start: that one
    # fails and the backoff doubles again (2 s, then 4 s), so the lease may wait that long.
    with pool.lease(timeout=30) as again:
        assert again.serial == device.serial
        assert again.shell("echo back").output.strip() == "back"
    record = _row(pool, device.serial).record
    assert not record.quarantined and record.consecutive == 0 and record.faults >= 2  # the history stays


def test_dropped_transport_is_reconnected_and_the_phone_stays_in_service(virtual_pool):
    pool, source = virtual_pool(1)
    with pytest.raises(DeviceOffline):
        with pool.lease(timeout=5) as device:
            source.phones[0].disconnect_host()
            started = time.monotonic()
            try:
                for _ in range(50):  # the adb server may take a moment to notice the cable is gone
                    device.shell("echo hi", timeout=5)
                    time.sleep(0.02)
            finally:
                raised_after = time.monotonic() - started
    assert raised_after < 2.0
    record = _row(pool, device.serial).record
    assert record.faults == 1 and not record.quarantined  # adb connect brought it back
    with pool.lease(timeout=5) as again:
        assert again.shell("echo hi").output.strip() == "hi"


def test_quarantine_after_n_infra_faults_even_when_the_probe_passes(virtual_pool):
    pool, _ = virtual_pool(1, quarantine=QuarantinePolicy(max_faults=2, backoff_s=60))
    with pytest.raises(ElementNotFound):  # the planner's mistake, not the device's
        with pool.lease(timeout=5) as device:
            raise ElementNotFound("no such button")
    assert _row(pool, device.serial).record.faults == 0
    with pool.lease(timeout=5) as device:
        lease_fault = UiServerDown("UiAutomation not connected")
    with pytest.raises(UiServerDown):
        with pool.lease(timeout=5):
            raise lease_fault
    record = _row(pool, device.serial).record
    assert (record.faults, record.consecutive, record.quarantined) == (1, 1, False)
    lease = pool.lease(timeout=5)
    with lease:
        lease.report(UiServerDown("caught by the harness, reported by hand"))
    record = _row(pool, device.serial).record
    assert (record.faults, record.consecutive, record.quarantined) == (2, 2, True)


def test_a_clean_lease_resets_the_fault_run(virtual_pool):
    pool, _ = virtual_pool(1, quarantine=QuarantinePolicy(max_faults=2, backoff_s=60))
    with pytest.raises(UiServerDown):
        with pool.lease(timeout=5) as device:
            raise UiServerDown("crashed")
    with pool.lease(timeout=5):
        pass
    with pytest.raises(UiServerDown):
        with pool.lease(timeout=5):
            raise UiServerDown("crashed again")
    record = _row(pool, device.serial).record
    assert (record.faults, record.consecutive, record.quarantined) == (2, 1, False)


def test_low_battery_phone_is_skipped_by_a_requirement(virtual_pool):
    pool, _ = virtual_pool(2)
    with pool.lease(timeout=5) as weak:
        weak.shell("dumpsys battery set level 15")
    for _ in range(4):
        with pool.lease(timeout=5, require=Requirement(min_battery=50)) as device:
            assert device.serial != weak.serial
    rows = {r.candidate.serial: r for r in pool.status()}
    assert rows[weak.serial].health.battery == 15 and rows[weak.serial].health.healthy


def test_devices_from_two_adb_servers_in_one_pool(adb_server, phone_factory, tmp_path):
    first = phone_factory()
    (tmp_path / "adb2").mkdir()
    with AdbServer(home=tmp_path / "adb2") as other:
        from device_farm.virtual import VirtualPhone

        with VirtualPhone() as phone:
            serial = other.connect_device(phone.address)
            sources = [AdbSource(f"{adb_server.host}:{adb_server.port}"), AdbSource(f"{other.host}:{other.port}")]
            pool = DevicePool(sources, state_dir=tmp_path / "pool")
            rows = pool.status()
            assert {(r.candidate.serial, r.candidate.source) for r in rows} >= {
                (first.serial, sources[0].name), (serial, sources[1].name)}
            with pool.lease(timeout=5, require=Requirement(source=sources[1].name)) as a, \
                    pool.lease(timeout=5, require=Requirement(serial=first.serial)) as b:
                assert (a.serial, a.adb_port) == (serial, other.port)
                assert (b.serial, b.adb_port) == (first.serial, adb_server.port)
                assert a.shell("getprop ro.serialno").output.strip() != b.shell("getprop ro.serialno").output.strip()


def test_unreachable_adb_server_is_reported_not_fatal(virtual_pool, tmp_path):
    from device_farm.adb.server import free_port

    dead = AdbSource(f"127.0.0.1:{free_port()}")
    pool, _ = virtual_pool(1)
    pool.sources.append(dead)
    with pool.lease(timeout=5) as device:
        assert device.shell("echo ok").output.strip() == "ok"
    assert dead.name in pool.source_errors and pool.source_errors[dead.name].startswith("device_offline")
