"""The virtual phone's display: its physical size and density, and the overrides that
`wm size` and `wm density` set.

The overrides are kept as settings (`global display_size_forced` = "W,H", `secure
display_density_forced` = dpi, where Android keeps them too), so a factory reset clears them
and snapshots carry them like any other setting. Everything that lays out, hit-tests or
renders the screen reads `display_metrics` at that moment.
"""

from __future__ import annotations

from dataclasses import dataclass

PHYSICAL_WIDTH, PHYSICAL_HEIGHT, PHYSICAL_DENSITY = 1080, 2400, 420
SIZE_KEY = ("global", "display_size_forced")
DENSITY_KEY = ("secure", "display_density_forced")
MIN_DENSITY = 72
MAX_SIZE = 10000

Settings = dict[str, dict[str, str]]


@dataclass(frozen=True)
class DisplayMetrics:
    """The screen as apps see it now (width, height, density) and as built."""

    width: int
    height: int
    density: int
    physical_width: int = PHYSICAL_WIDTH
    physical_height: int = PHYSICAL_HEIGHT
    physical_density: int = PHYSICAL_DENSITY

    @property
    def size_overridden(self) -> bool:
        return (self.width, self.height) != (self.physical_width, self.physical_height)

    @property
    def density_overridden(self) -> bool:
        return self.density != self.physical_density

    def dp(self, px: int) -> int:
        """Pixels in density-independent pixels (what deviceInfo's displaySizeDp* report)."""
        return round(px * 160 / self.density)


def display_metrics(settings: Settings) -> DisplayMetrics:
    """The current metrics; a malformed override reads as none, as the window manager does."""
    width, height, density = PHYSICAL_WIDTH, PHYSICAL_HEIGHT, PHYSICAL_DENSITY
    forced = settings.get(SIZE_KEY[0], {}).get(SIZE_KEY[1], "")
    w, _, h = forced.partition(",")
    if w.isdigit() and h.isdigit() and 0 < int(w) <= MAX_SIZE and 0 < int(h) <= MAX_SIZE:
        width, height = int(w), int(h)
    dpi = settings.get(DENSITY_KEY[0], {}).get(DENSITY_KEY[1], "")
    if dpi.isdigit() and int(dpi) >= MIN_DENSITY:
        density = int(dpi)
    return DisplayMetrics(width, height, density)


def force_size(settings: Settings, size: tuple[int, int] | None) -> None:
    """Override the size (None resets it to the physical one)."""
    table = settings.setdefault(SIZE_KEY[0], {})
    if size is None or size == (PHYSICAL_WIDTH, PHYSICAL_HEIGHT):
        table.pop(SIZE_KEY[1], None)
    else:
        table[SIZE_KEY[1]] = f"{size[0]},{size[1]}"


def force_density(settings: Settings, density: int | None) -> None:
    """Override the density (None resets it to the physical one)."""
    table = settings.setdefault(DENSITY_KEY[0], {})
    if density is None or density == PHYSICAL_DENSITY:
        table.pop(DENSITY_KEY[1], None)
    else:
        table[DENSITY_KEY[1]] = str(density)
