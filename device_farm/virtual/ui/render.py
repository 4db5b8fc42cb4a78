"""Draws the virtual phone's screen: a view tree becomes a 1080x2400 picture.

Each node is painted from its bounds in tree order (parents first, later siblings on top,
the order hit testing uses), with a look chosen by widget class and state: filled buttons,
switches with a track and thumb, outlined text fields (hint in grey, focus in blue with a
caret), list rows with dividers, dialogs as cards over a dimmed scrim, launcher icons. A
status bar (clock, Wi-Fi, battery) and a navigation handle frame it. Encoded pictures are
cached by a digest of everything drawn, so a screen that did not change costs a lookup.
"""

from __future__ import annotations

import base64
import hashlib
import io
from collections import OrderedDict
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

from device_farm.virtual.ui.views import Bounds, ViewNode, walk

FontT = ImageFont.FreeTypeFont | ImageFont.ImageFont
FONT_FILES = (
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
)
BACKGROUND = (255, 255, 255)
SURFACE = (243, 246, 252)
TEXT = (31, 31, 31)
TEXT_DIM = (110, 113, 120)
PRIMARY = (11, 87, 208)
ON_PRIMARY = (255, 255, 255)
OUTLINE = (116, 119, 127)
DIVIDER = (225, 227, 230)
WALLPAPER = (32, 56, 100)
CACHE_SIZE = 32
ICON_GLYPHS = ((("cancel", "close", "dismiss"), "✕"), (("navigate up", "back"), "←"),
               (("more options", "menu"), "⋮"), (("search",), "⌕"))


@dataclass(frozen=True)
class StatusBar:
    """What the status bar shows."""

    clock: str = "12:00"
    battery: int = 100
    wifi: bool = True
    mobile_data: bool = True
    airplane: bool = False


@lru_cache(maxsize=None)
def font(size: int) -> FontT:
    """DejaVu Sans when the system has it, else Pillow's own scalable font."""
    for path in FONT_FILES:
        if Path(path).is_file():
            return ImageFont.truetype(path, size)
    return ImageFont.load_default(size=size)


def _fit(draw: ImageDraw.ImageDraw, text: str, width: int, size: int) -> tuple[str, FontT]:
    """Shrink to at most 30% below `size`, then ellipsize, so the text fits `width`."""
    min_size = max(12, int(size * 0.7))
    while True:
        f = font(size)
        if draw.textlength(text, font=f) <= width or size <= min_size:
            break
        size -= 4
    if draw.textlength(text, font=f) <= width:
        return text, f
    while text and draw.textlength(text + "…", font=f) > width:
        text = text[:-1]
    return text + "…", f


def _text(draw: ImageDraw.ImageDraw, b: Bounds, text: str, color: tuple[int, int, int],
          size: int, center: bool = False, pad: int = 24) -> None:
    if not text or b.right - b.left <= 2 * pad:
        return
    line, f = _fit(draw, text, b.right - b.left - 2 * pad, size)
    y = (b.top + b.bottom) // 2
    if center:
        draw.text(((b.left + b.right) // 2, y), line, fill=color, font=f, anchor="mm")
    else:
        draw.text((b.left + pad, y), line, fill=color, font=f, anchor="lm")


def _size_for(b: Bounds, cap: int = 56) -> int:
    return max(24, min(cap, int((b.bottom - b.top) * 0.42)))


class Painter:
    """Paints one view tree onto a fresh image."""

    def __init__(self, width: int, height: int, status_height: int, nav_height: int) -> None:
        self.width, self.height = width, height
        self.status_height, self.nav_height = status_height, nav_height

    def paint(self, root: ViewNode, status: StatusBar) -> Image.Image:
        launcher = any(n.resource_id.endswith(":id/workspace") for n, _, _ in walk(root))
        img = Image.new("RGB", (self.width, self.height), WALLPAPER if launcher else BACKGROUND)
        draw = ImageDraw.Draw(img, "RGBA")
        for node, _, _ in walk(root):
            self._node(draw, node, launcher)
        self._status_bar(draw, status, dark=not launcher)
        self._nav_bar(draw, dark=not launcher)
        return img

    # --- widgets -------------------------------------------------------------------------
    def _node(self, draw: ImageDraw.ImageDraw, n: ViewNode, launcher: bool) -> None:
        b = n.bounds
        if b.right <= b.left or b.bottom <= b.top:
            return
        cls = n.cls.rsplit(".", 1)[-1]
        if cls == "Switch":
            self._switch(draw, n)
        elif cls == "EditText":
            self._edit_text(draw, n)
        elif cls == "ImageButton":
            self._image_button(draw, n)
        elif cls == "Button":
            self._button(draw, n)
        elif cls in ("TextView", "CheckBox", "RadioButton"):
            if launcher and n.clickable:
                self._icon(draw, n)
            else:
                self._text_view(draw, n)
        elif n.resource_id == "android:id/parentPanel":
            draw.rounded_rectangle((b.left, b.top, b.right, b.bottom), radius=48, fill=SURFACE)
        elif n.clickable and not n.children and not n.text:
            draw.rectangle((b.left, b.top, b.right, b.bottom), fill=(0, 0, 0, 110))  # scrim
        elif n.resource_id.endswith(":id/tabs"):
            draw.rectangle((b.left, b.top, b.right, b.bottom), fill=SURFACE)
            draw.line((b.left, b.top, b.right, b.top), fill=DIVIDER, width=2)
        elif n.resource_id.endswith("_item") or cls in ("LinearLayout", "FrameLayout") and n.clickable:
            draw.line((b.left + 48, b.bottom - 1, b.right - 48, b.bottom - 1), fill=DIVIDER, width=2)

    def _text_view(self, draw: ImageDraw.ImageDraw, n: ViewNode) -> None:
        b = n.bounds
        text = n.text or n.content_desc
        if n.selected:
            draw.rounded_rectangle((b.left + 40, b.top + 30, b.right - 40, b.bottom - 30),
                                   radius=40, fill=(211, 227, 253))
            _text(draw, b, text, PRIMARY, 40, center=True)
            return
        if n.content_desc and n.content_desc == n.text:  # a tab or icon label
            size = 40
        else:
            size = _size_for(b, cap=88 if b.bottom - b.top >= 130 else 52)
        color = TEXT_DIM if not n.enabled else TEXT
        _text(draw, b, text, color, size, center=b.bottom - b.top > 600)

    def _button(self, draw: ImageDraw.ImageDraw, n: ViewNode) -> None:
        b = n.bounds
        fill = PRIMARY if n.enabled else DIVIDER
        draw.rounded_rectangle((b.left + 4, b.top + 4, b.right - 4, b.bottom - 4),
                               radius=(b.bottom - b.top) // 2, fill=fill)
        _text(draw, b, n.text or n.content_desc, ON_PRIMARY, _size_for(b, 44), center=True)

    def _image_button(self, draw: ImageDraw.ImageDraw, n: ViewNode) -> None:
        """A floating action button for add/create, else a toolbar icon (a glyph)."""
        b = n.bounds
        desc = n.content_desc.lower()
        size = min(110, int((b.bottom - b.top) * 0.6))
        if n.text:
            _text(draw, b, n.text, PRIMARY, _size_for(b, 44), center=True)
        elif desc.startswith(("add", "new", "create")):
            draw.rounded_rectangle((b.left, b.top, b.right, b.bottom), radius=56, fill=(211, 227, 253))
            _text(draw, b, "+", PRIMARY, size, center=True, pad=0)
        else:
            glyph = next((g for words, g in ICON_GLYPHS if desc.startswith(words)), desc[:1].upper())
            _text(draw, b, glyph, TEXT, min(72, size), center=True, pad=0)

    def _switch(self, draw: ImageDraw.ImageDraw, n: ViewNode) -> None:
        b = n.bounds
        cx, cy = (b.left + b.right) // 2, (b.top + b.bottom) // 2
        w, h = 130, 72
        track = (cx - w // 2, cy - h // 2, cx + w // 2, cy + h // 2)
        if n.checked:
            draw.rounded_rectangle(track, radius=h // 2, fill=PRIMARY)
            tx, r, thumb = track[2] - h // 2, 26, ON_PRIMARY
        else:
            draw.rounded_rectangle(track, radius=h // 2, fill=(225, 226, 236), outline=OUTLINE, width=4)
            tx, r, thumb = track[0] + h // 2, 18, OUTLINE
        draw.ellipse((tx - r, cy - r, tx + r, cy + r), fill=thumb)

    def _edit_text(self, draw: ImageDraw.ImageDraw, n: ViewNode) -> None:
        b = n.bounds
        color, width = (PRIMARY, 6) if n.focused else (OUTLINE, 3)
        draw.rounded_rectangle((b.left + 6, b.top + 6, b.right - 6, b.bottom - 6), radius=16,
                               outline=color, width=width)
        shown = "•" * len(n.value) if n.password else n.value
        size = _size_for(b, 52)
        if shown:
            _text(draw, b, shown, TEXT, size, pad=36)
        else:
            _text(draw, b, n.hint or n.text, TEXT_DIM, size, pad=36)
        if n.focused:
            f = font(size)
            x = b.left + 36 + int(draw.textlength(shown, font=f)) + 4
            x = min(x, b.right - 30)
            draw.line((x, b.top + 40, x, b.bottom - 40), fill=PRIMARY, width=4)

    def _icon(self, draw: ImageDraw.ImageDraw, n: ViewNode) -> None:
        b = n.bounds
        label = n.text or n.content_desc
        cx = (b.left + b.right) // 2
        r = min(80, (b.right - b.left) // 3)
        cy = b.top + 40 + r
        hue = int(hashlib.md5(label.encode()).hexdigest()[:6], 16)
        fill = (80 + hue % 150, 80 + (hue >> 8) % 150, 80 + (hue >> 16) % 150)
        draw.ellipse((cx - r, cy - r, cx + r, cy + r), fill=fill)
        _text(draw, Bounds(cx - r, cy - r, cx + r, cy + r), label[:1].upper(), ON_PRIMARY, 72,
              center=True, pad=0)
        _text(draw, Bounds(b.left, cy + r + 10, b.right, cy + r + 80), label, ON_PRIMARY, 38,
              center=True, pad=8)

    # --- system bars -------------------------------------------------------------------
    def _status_bar(self, draw: ImageDraw.ImageDraw, s: StatusBar, dark: bool) -> None:
        h = self.status_height
        fg = TEXT if dark else ON_PRIMARY
        draw.rectangle((0, 0, self.width, h), fill=SURFACE if dark else WALLPAPER)
        draw.text((60, h // 2), s.clock, fill=fg, font=font(46), anchor="lm")
        # battery: outline, fill by level, percentage
        right = self.width - 60
        body = (right - 140, h // 2 - 22, right - 64, h // 2 + 22)
        draw.rounded_rectangle(body, radius=8, outline=fg, width=4)
        draw.rectangle((body[2] + 2, h // 2 - 9, body[2] + 10, h // 2 + 9), fill=fg)
        level_w = int((body[2] - body[0] - 12) * max(0, min(100, s.battery)) / 100)
        draw.rectangle((body[0] + 6, body[1] + 6, body[0] + 6 + level_w, body[3] - 6), fill=fg)
        draw.text((body[0] - 14, h // 2), f"{s.battery}%", fill=fg, font=font(38), anchor="rm")
        x = body[0] - 130
        if s.airplane:
            draw.text((x, h // 2), "✈", fill=fg, font=font(46), anchor="rm")
            return
        if s.wifi:  # a fan of three arcs over a dot
            cx, cy = x - 40, h // 2 + 24
            for r in (16, 32, 48):
                draw.arc((cx - r, cy - r, cx + r, cy + r), 225, 315, fill=fg, width=7)
            x -= 100
        if s.mobile_data:  # signal bars
            for i in range(4):
                bh = 12 + i * 10
                draw.rectangle((x - 80 + i * 20, h // 2 + 22 - bh, x - 68 + i * 20, h // 2 + 22), fill=fg)

    def _nav_bar(self, draw: ImageDraw.ImageDraw, dark: bool) -> None:
        top = self.height - self.nav_height
        cx, cy = self.width // 2, top + self.nav_height // 2
        color = (60, 60, 60) if dark else (230, 230, 230)
        draw.rounded_rectangle((cx - 110, cy - 6, cx + 110, cy + 6), radius=6, fill=color)


def tree_digest(root: ViewNode, status: StatusBar, screen_on: bool) -> str:
    """A key that changes whenever anything drawn changes."""
    h = hashlib.blake2b(digest_size=16)
    h.update(repr((status, screen_on)).encode())
    for n, _, depth in walk(root):
        h.update(repr((depth, n.cls, str(n.bounds), n.text, n.value, n.hint, n.content_desc,
                       n.resource_id, n.checked, n.focused, n.selected, n.enabled, n.clickable,
                       n.password, len(n.children))).encode())
    return h.hexdigest()


class ScreenRenderer:
    """Renders screens and encodes them, keeping the last few encodings by digest."""

    def __init__(self, width: int, height: int, status_height: int, nav_height: int) -> None:
        self.width, self.height = width, height
        self._painter = Painter(width, height, status_height, nav_height)
        self._cache: OrderedDict[tuple[str, str, float, int], bytes] = OrderedDict()

    def image(self, root: ViewNode, status: StatusBar, screen_on: bool = True) -> Image.Image:
        if not screen_on:
            return Image.new("RGB", (self.width, self.height), (0, 0, 0))
        return self._painter.paint(root, status)

    def encoded(self, root: ViewNode, status: StatusBar, screen_on: bool = True,
                fmt: str = "png", scale: float = 1.0, quality: int = 80) -> bytes:
        """PNG (or JPEG) bytes of the screen, from the cache when nothing changed."""
        key = (tree_digest(root, status, screen_on), fmt, scale, quality)
        hit = self._cache.get(key)
        if hit is not None:
            self._cache.move_to_end(key)
            return hit
        img = self.image(root, status, screen_on)
        if scale != 1.0:
            size = (max(1, round(self.width * scale)), max(1, round(self.height * scale)))
            img = img.resize(size, Image.Resampling.BILINEAR)
        buf = io.BytesIO()
        if fmt == "png":
            img.save(buf, "PNG", compress_level=1)
        else:
            img.save(buf, "JPEG", quality=max(1, min(100, quality)))
        data = buf.getvalue()
        self._cache[key] = data
        if len(self._cache) > CACHE_SIZE:
            self._cache.popitem(last=False)
        return data

    def jpeg_base64(self, root: ViewNode, status: StatusBar, screen_on: bool = True,
                    scale: float = 1.0, quality: int = 80) -> str:
        return base64.b64encode(self.encoded(root, status, screen_on, "jpeg", scale, quality)).decode()
