"""Settings: typed, documented, read from environment variables (prefix ``PLANNER_AGENT_``).

This is the one place that reads the environment; everything else takes plain arguments.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import platformdirs
from pydantic import BaseModel, ConfigDict, Field, field_validator

from planner_runtime.errors import ConfigError

PREFIX = "PLANNER_AGENT_"


class Settings(BaseModel):
    model_config = ConfigDict(frozen=True)

    home: Path = Field(
        default_factory=lambda: Path(platformdirs.user_data_dir("planner-agent")),
        description="Where trajectories and other user data live (PLANNER_AGENT_HOME).",
    )
    adb: str = Field(default="127.0.0.1:5037", description="The adb server to look for phones on, host:port (PLANNER_AGENT_ADB).")
    planner: str = Field(default="local", description="Default planner backend (PLANNER_AGENT_PLANNER).")
    max_steps: int = Field(default=12, ge=1, description="Default step limit of an episode (PLANNER_AGENT_MAX_STEPS).")
    appium_url: str | None = Field(
        default=None, description="An Appium server, grid or device cloud, e.g. http://127.0.0.1:4723 (PLANNER_AGENT_APPIUM_URL)."
    )
    appium_caps: dict[str, Any] = Field(
        default_factory=dict,
        description='W3C capabilities for its sessions, as JSON: {"platformName": "Android", '
        '"appium:automationName": "UiAutomator2", "appium:udid": "..."} (PLANNER_AGENT_APPIUM_CAPS).',
    )

    prices: dict[str, dict[str, float]] = Field(
        default_factory=dict,
        description='Dollars per 1M tokens by planner model, as JSON: {"gpt-4o-mini": {"input": 0.15, "output": 0.6}}; '
        "a key matches a trajectory's planner release or the model inside it; local models cost 0 (PLANNER_AGENT_PRICES).",
    )

    @field_validator("appium_caps", "prices", mode="before")
    @classmethod
    def _caps_from_json(cls, value: Any) -> Any:
        return json.loads(value) if isinstance(value, str) else value

    @property
    def store_path(self) -> Path:
        return self.home / "trajectories.sqlite"

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> Settings:
        env = os.environ if environ is None else environ
        values = {name: env[PREFIX + name.upper()] for name in cls.model_fields if PREFIX + name.upper() in env}
        try:
            return cls(**values)
        except ValueError as exc:
            raise ConfigError(f"bad {PREFIX}* setting: {exc}") from exc


def parse_host_port(value: str, default_port: int = 5037) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    if not host:
        host, port = value, str(default_port)
    if not port.isdigit():
        raise ConfigError(f"expected host:port, got {value!r}")
    return host or "127.0.0.1", int(port)
