"""``--release NAME``, the option every verb that chooses a planner takes: recorded as the model
``release:NAME`` and resolved to the release's checked model folder when the planner is made."""

from __future__ import annotations

from planner_runtime.config import Settings
from planner_runtime.errors import ConfigError

RELEASE_HELP = "For --planner local: a trained release by name (see `planner-agent releases list`; 'base': the untrained model)."


def model_option(model: str | None, release: str | None, planner: str | None = "local") -> str | None:
    """The ``--model`` a verb passes on: ``release:NAME`` for ``--release NAME`` (resolved when the
    planner is made, so a collection records the release's name, not a cache folder). For
    ``--planner local`` with neither given it is the default release (the promoted one, else the
    shipped one), so the default is recorded by name too; ``--release base`` is the untrained model."""
    from planner_runtime.training.promotion import model_of
    from planner_runtime.training.releases import default_release

    if release is None:
        if model is None and planner == "local" and (default := default_release(Settings.from_env().home)):
            return model_of(default)
        return model
    if model is not None:
        raise ConfigError("--model and --release exclude each other: give one")
    return model_of(release)


def resolved_model(model: str | None) -> str | None:
    """``model`` with a release replaced by the folder the local planner loads (checked first)."""
    from planner_runtime.training.releases import resolve_model

    settings = Settings.from_env()
    return resolve_model(model, settings.home, settings.cache_dir)
