"""`wm` (the window manager's shell command): `size` and `density`, shown, overridden and
reset, with Android's output and error texts.

`wm size` prints `Physical size: 1080x2400` and, under an override, `Override size: WxH`;
`wm size 720x1600` (or `360dpx800dp`) and `wm size reset` print nothing. Sizes are clamped as
the window manager clamps them (at least 200 px, at most twice the physical size).
"""

from __future__ import annotations

from device_farm.virtual.os.display import MIN_DENSITY, force_density, force_size
from device_farm.virtual.shell.session import CommandContext

MIN_SIZE, MAX_SCALE = 200, 2
HELP = """Window manager (window) commands:
  help
      Print this help text.
  size [reset|WxH|WdpxHdp] [-d DISPLAY_ID]
    Return or override display size.
    width and height in pixels unless suffixed with 'dp'.
  density [reset|DENSITY] [-d DISPLAY_ID]
    Return or override display density.
"""


class _BadNumber(ValueError):
    pass


def _number(text: str) -> int:
    if not text.lstrip("-").isdigit():
        raise _BadNumber(f'java.lang.NumberFormatException: For input string: "{text}"')
    return int(text)


def _dimension(text: str, density: int) -> int:
    if text.endswith("dp"):
        return _number(text[:-2]) * density // 160
    return _number(text)


def _size(ctx: CommandContext, arg: str | None) -> int:
    d = ctx.system.display
    if arg is None:
        ctx.out(f"Physical size: {d.physical_width}x{d.physical_height}\n")
        if d.size_overridden:
            ctx.out(f"Override size: {d.width}x{d.height}\n")
        return 0
    if arg == "reset":
        force_size(ctx.system.settings, None)
        return 0
    div = arg.find("x")
    if div <= 0 or div >= len(arg) - 1:
        ctx.err(f"Error: bad size {arg}\n")
        return 255
    try:
        width, height = _dimension(arg[:div], d.density), _dimension(arg[div + 1:], d.density)
    except _BadNumber as exc:
        ctx.err(f"Error: bad number {exc}\n")
        return 255
    width = min(max(width, MIN_SIZE), d.physical_width * MAX_SCALE)
    height = min(max(height, MIN_SIZE), d.physical_height * MAX_SCALE)
    force_size(ctx.system.settings, (width, height))
    return 0


def _density(ctx: CommandContext, arg: str | None) -> int:
    d = ctx.system.display
    if arg is None:
        ctx.out(f"Physical density: {d.physical_density}\n")
        if d.density_overridden:
            ctx.out(f"Override density: {d.density}\n")
        return 0
    if arg == "reset":
        force_density(ctx.system.settings, None)
        return 0
    try:
        density = _number(arg)
    except _BadNumber as exc:
        ctx.err(f"Error: bad number {exc}\n")
        return 255
    if density < MIN_DENSITY:
        ctx.err(f"Error: density must be >= {MIN_DENSITY}\n")
        return 255
    force_density(ctx.system.settings, density)
    return 0


def wm(ctx: CommandContext, args: list[str]) -> int:
    verb, rest = (args[0], args[1:]) if args else (None, [])
    if "-d" in rest:  # the phone has one display, whichever id is named
        at = rest.index("-d")
        rest = rest[:at] + rest[at + 2:]
    arg = rest[0] if rest else None
    if verb == "size":
        return _size(ctx, arg)
    if verb == "density":
        return _density(ctx, arg)
    if verb in (None, "help", "-h"):
        ctx.out(HELP)
    else:
        ctx.out(f"Unknown command: {verb}\n")
    return 255
