"""Files by Google (com.google.android.apps.nbu.files) over the phone's real file system:
what `adb push` writes under /sdcard shows up, and a delete here is gone for `ls` too.

Screens: Browse (Downloads, Images, Internal storage), a folder list (folders first, then
files by name, with size and date; it scrolls), the Images list (every image under DCIM and
Pictures), and a file's details with Share and Delete (Delete asks "Delete this file
permanently?" first). Intents: `android.intent.action.VIEW` with a `file:///sdcard/...`
folder or file, and `android.intent.action.VIEW_DOWNLOADS`.
"""

from __future__ import annotations

import time
from typing import Callable

from device_farm.virtual.os.app import Activity, App
from device_farm.virtual.os.fs import FsError
from device_farm.virtual.os.intents import ACTION_VIEW, ComponentName, Intent
from device_farm.virtual.ui.views import Bounds, ViewNode
from device_farm.virtual.ui.widgets import button, group, row_list, scrolled, text_view

PACKAGE = "com.google.android.apps.nbu.files"
HOME = "com.google.android.apps.nbu.files.home.HomeActivity"
BROWSER = "com.google.android.apps.nbu.files.filebrowser.FileBrowserActivity"
DETAILS = "com.google.android.apps.nbu.files.preview.FilePreviewActivity"
ACTION_VIEW_DOWNLOADS = "android.intent.action.VIEW_DOWNLOADS"
IMAGES = "images:"
IMAGE_TYPES = (".jpg", ".jpeg", ".png", ".gif", ".webp", ".heic")
ROW_HEIGHT = 200


def rid(name: str) -> str:
    return f"{PACKAGE}:id/{name}"


def human_size(size: int) -> str:
    """`512 B`, `2.4 kB`, `3.1 MB`, as Files shows sizes (powers of 1000)."""
    if size < 1000:
        return f"{size} B"
    value, unit = size / 1000, "kB"
    for bigger in ("MB", "GB"):
        if value < 1000:
            break
        value, unit = value / 1000, bigger
    return f"{value:.1f} {unit}"


class FilesActivity(Activity):
    """Browse home, a folder, the Images list, or one file's details (by activity and data)."""

    def __init__(self, app: "Files", name: str, intent: Intent) -> None:
        super().__init__(app, name, intent)
        self.files = app
        self.path = (intent.data or "").removeprefix("file://").rstrip("/") or "/sdcard"
        self.confirm = False
        self.first = 0
        self._list, self._rows = Bounds(0, 0, 0, 0), 0

    def rows(self) -> list[Callable[[Bounds], ViewNode]]:
        fs = self.system.fs
        if self.name == HOME:
            return [self._row("Downloads", "Files you downloaded", lambda: self.files.open("/sdcard/Download")),
                    self._row("Images", "Camera photos and pictures", lambda: self.files.open(IMAGES)),
                    self._row("Internal storage", "Folders on this phone", lambda: self.files.open("/sdcard"))]
        if self.path == IMAGES:
            found = [p for p in self.files.walk("/sdcard/DCIM") + self.files.walk("/sdcard/Pictures")
                     if p.lower().endswith(IMAGE_TYPES)]
            return [self._file_row(p) for p in sorted(found, key=lambda p: -fs.lookup(p).mtime)]  # type: ignore[union-attr]
        try:
            entries = fs.listdir(self.path)
        except FsError:
            return []
        entries = [e for e in entries if not e[0].startswith(".")]
        dirs = [self._row(n, f"{len(node.children or {})} items", lambda p=f"{self.path}/{n}": self.files.open(p))
                for n, node in entries if node.is_dir]
        return dirs + [self._file_row(f"{self.path}/{n}") for n, node in entries if not node.is_dir]

    def _row(self, title: str, summary: str, on_click: Callable[[], None]) -> Callable[[Bounds], ViewNode]:
        def make(b: Bounds) -> ViewNode:
            return group(b, [text_view(Bounds(200, b.top + 40, b.right - 60, b.top + 110), title, rid("file_name")),
                             text_view(Bounds(200, b.top + 110, b.right - 60, b.top + 170), summary,
                                       rid("file_details"))], cls="android.widget.LinearLayout", on_click=on_click)
        return make

    def _file_row(self, path: str) -> Callable[[Bounds], ViewNode]:
        node = self.system.fs.lookup(path)
        size, mtime = (node.size, node.mtime) if node else (0, 0)
        summary = f"{human_size(size)}, {time.strftime('%b %d', time.gmtime(mtime))}"
        return self._row(path.rsplit("/", 1)[-1], summary, lambda: self.files.open(path, details=True))

    def title(self) -> str:
        if self.name == HOME:
            return "Browse"
        if self.path == IMAGES:
            return "Images"
        return {"/sdcard": "Internal storage", "/sdcard/Download": "Downloads"}.get(self.path, self.path.rsplit("/", 1)[-1])

    def build(self, screen: Bounds) -> list[ViewNode]:
        w = screen.right
        views = [text_view(Bounds(60, screen.top + 40, w - 60, screen.top + 180), self.title(), rid("toolbar_title"))]
        if self.name == DETAILS:
            return views + self._details(screen)
        rows = self.rows()
        self._list, self._rows = Bounds(0, screen.top + 220, w, screen.bottom - 180), len(rows)
        if rows:
            views.append(row_list(self._list, rows, ROW_HEIGHT, min(self.first, len(rows) - 1), rid("file_list")))
        else:
            views.append(text_view(self._list, "No files here", rid("empty_state_text")))
        tabs = [text_view(Bounds(i * w // 2, screen.bottom - 180, (i + 1) * w // 2, screen.bottom), name, desc=name,
                          on_click=(lambda: self.files.open(None)) if name == "Browse" else (lambda: None))
                for i, name in enumerate(("Clean", "Browse"))]
        tabs[1].selected = True
        return views + [group(Bounds(0, screen.bottom - 180, w, screen.bottom), tabs, rid("bottom_navigation"))]

    def _details(self, screen: Bounds) -> list[ViewNode]:
        w, node = screen.right, self.system.fs.lookup(self.path)
        if node is None:
            return [text_view(Bounds(60, screen.top + 220, w - 60, screen.top + 320), "File not found", rid("error"))]
        top = screen.top + 220
        views = [text_view(Bounds(60, top, w - 60, top + 90), self.path.rsplit("/", 1)[-1], rid("file_name")),
                 text_view(Bounds(60, top + 100, w - 60, top + 170), self.path, rid("file_path")),
                 text_view(Bounds(60, top + 180, w - 60, top + 250), human_size(node.size), rid("file_size")),
                 button(Bounds(60, top + 320, 500, top + 460), "Share", rid("share_button")),
                 button(Bounds(580, top + 320, w - 60, top + 460), "Delete", rid("delete_button"),
                        on_click=lambda: setattr(self, "confirm", True))]
        if self.path.lower().endswith((".txt", ".md", ".csv")):
            views.append(text_view(Bounds(60, top + 520, w - 60, screen.bottom - 40), bytes(node.data[:2000]).decode(
                "utf-8", "replace"), rid("text_preview")))
        if self.confirm:
            views += [group(Bounds(0, 0, w, screen.bottom), [], on_click=lambda: setattr(self, "confirm", False)),
                      group(Bounds(90, 900, 990, 1400), [
                          text_view(Bounds(150, 940, 930, 1100), "Delete this file permanently?", "android:id/message"),
                          button(Bounds(420, 1240, 660, 1360), "Cancel", "android:id/button2",
                                 on_click=lambda: setattr(self, "confirm", False)),
                          button(Bounds(700, 1240, 940, 1360), "Delete", "android:id/button1", on_click=self._delete),
                      ], "android:id/parentPanel", cls="android.widget.FrameLayout")]
        return views

    def _delete(self) -> None:
        try:
            self.system.fs.remove(self.path)
        except FsError:
            pass
        self.finish()

    def on_scroll(self, dy: int) -> bool:
        if not self._rows:
            self.system.window()
        before = self.first
        self.first = scrolled(self.first, dy, ROW_HEIGHT, self._rows, self._list)
        return before != self.first

    def on_back(self) -> bool:
        if self.confirm:
            self.confirm = False
            return True
        return False


class Files(App):
    PACKAGE = PACKAGE
    LABEL = "Files"
    LAUNCHER_ACTIVITY = HOME
    ACTIVITIES = (HOME, BROWSER, DETAILS)
    VERSION_NAME = "1.2087.574226463.0-release"
    VERSION_CODE = 208701

    def walk(self, path: str) -> list[str]:
        try:
            entries = self.system.fs.listdir(path)
        except FsError:
            return []
        out: list[str] = []
        for name, node in entries:
            out += self.walk(f"{path}/{name}") if node.is_dir else [f"{path}/{name}"]
        return out

    def open(self, path: str | None, details: bool = False) -> None:
        cls = HOME if path is None else DETAILS if details else BROWSER
        self.system.start_activity(Intent(ACTION_VIEW, data=None if path is None else f"file://{path}",
                                          component=ComponentName(PACKAGE, cls)))

    def resolve(self, intent: Intent) -> str | None:
        if intent.action == ACTION_VIEW_DOWNLOADS:
            return BROWSER
        if intent.action == ACTION_VIEW and (intent.data or "").startswith("file:///sdcard"):
            node = self.system.fs.lookup(intent.data.removeprefix("file://"))  # type: ignore[union-attr]
            return BROWSER if node is None or node.is_dir else DETAILS
        return None

    def launch(self, activity: str, intent: Intent) -> Activity | None:
        if intent.action == ACTION_VIEW_DOWNLOADS:
            intent = Intent(ACTION_VIEW, data="file:///sdcard/Download")
        return FilesActivity(self, activity, intent)
