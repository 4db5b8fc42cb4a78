"""The apps installed on a fresh virtual phone."""

from __future__ import annotations

from typing import Callable

from device_farm.virtual.os.app import App, Runtime


def default_apps() -> list[Callable[[Runtime], App]]:
    """Factories for the stock apps, home screen first."""
    from device_farm.virtual.apps.clock import Clock
    from device_farm.virtual.apps.contacts import Contacts
    from device_farm.virtual.apps.launcher import Launcher
    from device_farm.virtual.apps.calendar import Calendar
    from device_farm.virtual.apps.gmail import Gmail
    from device_farm.virtual.apps.dialer import Dialer
    from device_farm.virtual.apps.keep import Keep
    from device_farm.virtual.apps.files import Files
    from device_farm.virtual.apps.maps import Maps
    from device_farm.virtual.apps.music import Music
    from device_farm.virtual.apps.settings import Settings
    from device_farm.virtual.apps.messages import Messages
    from device_farm.virtual.apps.shopping import Shopping
    from device_farm.virtual.apps.food import DoorDash
    from device_farm.virtual.apps.travel import Booking
    from device_farm.virtual.apps.payments import PayPal

    return [Launcher, Clock, Contacts, Messages, Shopping, DoorDash, Booking, PayPal, Settings, Keep, Files, Maps, Music, Dialer, Gmail, Calendar]
