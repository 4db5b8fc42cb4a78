"""What an app is on the virtual phone: a package with activities, intent filters and
content providers; and what an activity is: a screen that builds its view tree.

Apps keep their data in their providers, so the UI, `content query` and intents all see
the same state; activities only keep transient UI state (field text, focus). These are the
framework's base classes (as `android.app.Activity` is), so they live with the system that
runs them; the apps in `virtual.apps` subclass them.

An app sees its system only as a `Runtime`: the few members apps and activities use, which
`system.AndroidSystem` has. It is declared here, not next to the system, because the system
holds apps and activities: the base classes naming the system itself would make a loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Protocol, runtime_checkable

from device_farm.virtual.os.content import SqliteProvider
from device_farm.virtual.os.fs import FileSystem
from device_farm.virtual.os.intents import Intent
from device_farm.virtual.ui.views import Bounds, ViewNode


@dataclass(frozen=True)
class StartResult:
    """Outcome of startActivity: `error` is the line `am` prints on failure."""

    error: str | None = None
    delivered_to_top: bool = False


@runtime_checkable
class Runtime(Protocol):
    """What an app or activity may use of the system that runs it (and nothing more)."""

    fs: FileSystem
    props: dict[str, str]
    settings: dict[str, dict[str, str]]
    """`settings` namespaces (system, secure, global), key to value."""
    apps: dict[str, "App"]
    """Installed apps by package."""
    stack: list["Activity"]
    """The activity back stack, top last."""
    granted: dict[str, set[str]]
    """Runtime permissions granted, by package."""

    @property
    def foreground(self) -> "Activity": ...

    def now(self) -> float: ...

    def start_activity(self, intent: Intent) -> StartResult: ...

    def finish_activity(self, activity: "Activity") -> None: ...

    def provider(self, authority: str) -> SqliteProvider | None: ...

    def label_of(self, package: str) -> str: ...

    def window(self) -> ViewNode:
        """The focused window's view tree, freshly built (lays views out before input)."""
        ...


class Activity:
    """One activity instance on the back stack."""

    def __init__(self, app: "App", name: str, intent: Intent) -> None:
        self.app = app
        self.name = name
        self.intent = intent
        self.focused: str | None = None

    @property
    def package(self) -> str:
        return self.app.package

    @property
    def system(self) -> Runtime:
        return self.app.system

    def build(self, screen: Bounds) -> list[ViewNode]:
        """The content views inside the window's root frame."""
        return []

    def on_back(self) -> bool:
        """True if the activity consumed BACK (it stays on top)."""
        return False

    def on_scroll(self, dy: int) -> bool:
        """A vertical drag of ``dy`` pixels (positive: content moves up); True if it scrolled."""
        return False

    def finish(self) -> None:
        self.system.finish_activity(self)


class App:
    """Base class: subclasses set the class attributes and override the hooks."""

    PACKAGE: ClassVar[str] = ""
    LABEL: ClassVar[str] = ""
    LAUNCHER_ACTIVITY: ClassVar[str | None] = None
    ACTIVITIES: ClassVar[tuple[str, ...]] = ()
    VERSION_NAME: ClassVar[str] = "1.0"
    VERSION_CODE: ClassVar[int] = 1
    SYSTEM_APP: ClassVar[bool] = True

    def __init__(self, system: Runtime) -> None:
        self.system = system
        self._providers = self.create_providers()

    @property
    def package(self) -> str:
        return self.PACKAGE

    @property
    def label(self) -> str:
        return self.LABEL

    def create_providers(self) -> list[SqliteProvider]:
        """Fresh providers holding the app's data (called at install and on pm clear)."""
        return []

    def providers(self) -> list[SqliteProvider]:
        return self._providers

    def media_session(self) -> str | None:
        """This app's record in `dumpsys media_session`, if it has a media session."""
        return None

    def resolve(self, intent: Intent) -> str | None:
        """The activity class this app would handle an implicit intent with, if any."""
        return None

    def launch(self, activity: str, intent: Intent) -> Activity | None:
        """Create the activity for an intent; None if the intent is handled without UI."""
        return Activity(self, activity, intent)

    def data_dirs(self) -> tuple[str, ...]:
        """Where the app keeps files: private storage, then its external-storage folders."""
        pkg = self.package
        return (f"/data/data/{pkg}", f"/data/user/0/{pkg}", f"/sdcard/Android/data/{pkg}",
                f"/storage/emulated/0/Android/data/{pkg}", f"/sdcard/Android/media/{pkg}")

    def clear_data(self) -> None:
        """Forget all data, as `pm clear` does: fresh providers, empty data folders
        (the folders themselves stay, as on Android)."""
        for provider in self._providers:
            provider.close()
        self._providers = self.create_providers()
        fs = self.system.fs
        for path in self.data_dirs():
            node = fs.lookup(path)
            if node is not None and node.children is not None:
                node.children.clear()
