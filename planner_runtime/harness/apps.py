"""Catalogue of apps the harness knows by name, with the packages that provide them: the one list
of apps in the runtime (tools, skills, memory and ``open_app`` all read it).

Phones differ: the clock is ``com.google.android.deskclock`` on Pixels and
``com.sec.android.app.clockpackage`` on Samsung. A tool asks for an app by its plain name and the
catalogue picks whichever package the device has installed. The records are plain data, cheap to
load, because every episode needs them all (to see which apps a phone has, to rank skills);
each app's tools live in its own module under :mod:`planner_runtime.harness.tools`, imported
only for the apps in play (:mod:`planner_runtime.harness.tools.registry`).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class App:
    name: str
    packages: tuple[str, ...]
    aliases: tuple[str, ...] = ()
    topics: str = ""  # words of the goals it serves, for choosing its tools (harness.toolbox)
    # Its functional domain (one of harness.tools.simulated.family.DOMAINS, which simulated
    # families share), for the tool catalogue and the bench's breadth.
    domain: str = field(kw_only=True)


APPS: tuple[App, ...] = (
    App("Clock", ("com.google.android.deskclock", "com.android.deskclock", "com.sec.android.app.clockpackage"), ("alarm", "alarms", "deskclock"), "alarm wake up timer stopwatch time remind reminder", domain="productivity"),
    App("Contacts", ("com.google.android.contacts", "com.android.contacts", "com.samsung.android.app.contacts"), ("people", "address book"), "contact number person people email address", domain="communication"),
    App("Calendar", ("com.google.android.calendar", "com.android.calendar", "com.samsung.android.calendar"), ("agenda", "schedule", "events"), "appointment meeting event schedule agenda free busy", domain="productivity"),
    App("Gmail", ("com.google.android.gm", "com.samsung.android.email.provider", "com.android.email"), ("email", "e-mail", "mail"), "email inbox subject reply", domain="communication"),
    App("Phone", ("com.google.android.dialer", "com.android.dialer", "com.samsung.android.dialer"), ("dialer", "phone app", "calls", "call log"), "call missed ring dial voicemail", domain="communication"),
    App("Messages", ("com.google.android.apps.messaging", "com.android.messaging", "com.samsung.android.messaging"), ("sms", "texts", "text messages", "messaging"), "text sms chat reply", domain="communication"),
    App("Shopping", ("com.amazon.mShop.android.shopping",), ("amazon", "amazon shopping"), "buy order price cheapest cart product", domain="shopping"),
    App("Food delivery", ("com.dd.doordash",), ("doordash", "food", "food delivery"), "restaurant meal dinner lunch breakfast pizza delivered takeout order food hungry", domain="food"),
    App("Travel", ("com.booking",), ("booking.com", "hotels", "travel booking"), "hotel room stay night trip reservation", domain="travel"),
    App("Payments", ("com.paypal.android.p2pmobile",), ("paypal", "wallet", "bank", "payments"), "pay money send balance transfer owe", domain="finance"),
    App("Settings", ("com.android.settings",), ("system settings", "preferences"), "wifi bluetooth airplane brightness location lock pin permission silence silent mute disturb", domain="system"),
    App("Keep Notes", ("com.google.android.keep",), ("keep", "notes", "google keep"), "note list write jot remember", domain="productivity"),
    App("Maps", ("com.google.android.apps.maps",), ("google maps", "map", "navigation", "directions"), "directions route walk drive navigate home address place", domain="navigation"),
    App("YouTube Music", ("com.google.android.apps.youtube.music", "com.spotify.music"), ("music", "youtube music", "songs", "player"), "play song playlist album artist pause", domain="media"),
    App("Files", ("com.google.android.apps.nbu.files", "com.android.documentsui", "com.sec.android.app.myfiles"), ("files by google", "file manager", "my files", "downloads"), "file folder download photo document pdf", domain="productivity"),
)


def app_named(name: str) -> App:
    """The record of the app called exactly ``name`` (an app module's own, so a typo fails at import)."""
    for app in APPS:
        if app.name == name:
            return app
    raise LookupError(f"no app named {name!r} in the catalogue; known: {', '.join(a.name for a in APPS)}")


def find_app(name: str) -> App | None:
    key = name.strip().lower()
    for app in APPS:
        if key == app.name.lower() or key in app.aliases or key in app.packages:
            return app
    return None


def resolve_package(name: str, installed: set[str]) -> str | None:
    """The installed package for an app name (or a package name given directly)."""
    if name in installed:
        return name
    app = find_app(name)
    if app is None:
        return None
    return next((p for p in app.packages if p in installed), None)
