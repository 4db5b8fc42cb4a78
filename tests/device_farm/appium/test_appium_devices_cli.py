"""`planner-agent devices --appium URL` lists an Appium endpoint's device beside the others."""

from __future__ import annotations

import json
import os
import subprocess
import sys


def test_devices_lists_an_appium_endpoint(appium_server, fake_app, tmp_path):
    env = dict(os.environ, PLANNER_AGENT_APPIUM_CAPS=json.dumps(appium_server.capabilities(fake_app)))
    res = subprocess.run(
        [sys.executable, "-m", "planner_runtime.cli.main", "devices", "--appium", appium_server.url,
         "--state-dir", str(tmp_path), "--json"],
        capture_output=True, text=True, timeout=120, env=env,
    )
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    assert [s["error"] for s in data["sources"]] == [None]
    assert len(data["devices"]) == 1 and data["devices"][0]["source"].startswith("appium")
