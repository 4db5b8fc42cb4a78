"""What an app is on the virtual phone: a package with activities, intent filters and
content providers; and what an activity is: a screen that builds its view tree.

Apps keep their data in their providers, so the UI, `content query` and intents all see
the same state; activities only keep transient UI state (field text, focus). These are the
framework's base classes (as `android.app.Activity` is), so they live with the system that
runs them; the apps in `virtual.apps` subclass them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from device_farm.virtual.os.content import SqliteProvider
from device_farm.virtual.os.intents import Intent
from device_farm.virtual.ui.views import Bounds, ViewNode

if TYPE_CHECKING:
    from device_farm.virtual.os.system import AndroidSystem


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
    def system(self) -> "AndroidSystem":
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

    def __init__(self, system: "AndroidSystem") -> None:
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
