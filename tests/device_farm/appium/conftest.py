"""A real Appium 3 server with the fake driver, for the AppiumDevice and Appium source tests.

`appium_server` (session) runs the Appium installed by ``npm install --prefix .appium appium@3
@appium/fake-driver`` (what ``.ci/run`` does; ``APPIUM_HOME`` set to that folder makes the
fake driver visible) on a free loopback port, and stops it at the end. Without ``node`` or that
folder the tests skip with the command to run, except under ``CI=true``, where they fail.
`fake_app` is an app model for the fake driver; `appium_device` a connected AppiumDevice on it.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import httpx
import pytest

from device_farm.appium.device import AppiumDevice

REPO = Path(__file__).resolve().parents[3]
APPIUM_HOME = Path(os.environ.get("APPIUM_HOME") or REPO / ".appium")
INSTALL = "npm install --prefix .appium appium@3 @appium/fake-driver"

# One screen of a settings-like app in the fake driver's app model (tags are widget kinds,
# geometry in left/top/width/height). The hidden row must not reach the planner.
FAKE_APP_XML = """<app width="1080" height="1920">
  <MockListItem id="title" text="Display" left="0" top="0" width="1080" height="120"/>
  <MockButton id="save" text="Save" left="100" top="200" width="300" height="120"/>
  <MockButton id="cancel" text="Don't save" left="500" top="200" width="300" height="120"/>
  <MockInputField id="name" left="100" top="400" width="880" height="140"/>
  <MockInputField id="note" left="100" top="600" width="880" height="140"/>
  <MockListItem id="secret" text="Hidden row" visible="false" left="0" top="800" width="1080" height="120"/>
</app>
"""


@dataclass(frozen=True)
class AppiumServer:
    url: str
    log: Path

    def capabilities(self, app: Path) -> dict[str, Any]:
        return {"platformName": "Fake", "appium:automationName": "Fake", "appium:app": str(app)}


def _unavailable(reason: str) -> None:
    message = f"{reason}; install it with `{INSTALL}` (needs node)"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI needs the Appium tests: {message}", pytrace=False)
    pytest.skip(message)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def appium_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppiumServer]:
    node = shutil.which("node")
    script = APPIUM_HOME / "node_modules" / "appium" / "index.js"
    if node is None:
        _unavailable("node is not on PATH")
    if not script.is_file() or not (APPIUM_HOME / "node_modules" / "@appium" / "fake-driver").is_dir():
        _unavailable(f"Appium 3 with the fake driver is not installed in {APPIUM_HOME}")
    port = _free_port()
    log = tmp_path_factory.mktemp("appium") / "appium.log"
    env = {**os.environ, "APPIUM_HOME": str(APPIUM_HOME), "HOME": str(log.parent)}
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [str(node), str(script), "--address", "127.0.0.1", "--port", str(port), "--log-no-colors"],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                pytest.fail(f"Appium exited with {proc.returncode}:\n{log.read_text()[-2000:]}", pytrace=False)
            try:
                if httpx.get(url + "/status", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass  # not listening yet
            if time.monotonic() > deadline:
                pytest.fail(f"Appium did not answer /status within 60 s:\n{log.read_text()[-2000:]}", pytrace=False)
            time.sleep(0.2)
        yield AppiumServer(url=url, log=log)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="session")
def fake_app(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("fake-app") / "settings.xml"
    path.write_text(FAKE_APP_XML, encoding="utf-8")
    return path


@pytest.fixture
def appium_device(appium_server: AppiumServer, fake_app: Path) -> Iterator[AppiumDevice]:
    device = AppiumDevice(appium_server.url, appium_server.capabilities(fake_app), timeout=30)
    device.connect()
    try:
        yield device
    finally:
        device.close()
