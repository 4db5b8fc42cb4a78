"""The home screen: one clickable icon (a TextView with the app's label) per launchable app."""

from __future__ import annotations

from device_farm.virtual.os.app import Activity, App
from device_farm.virtual.os.intents import (
    ACTION_MAIN, CATEGORY_HOME, CATEGORY_LAUNCHER, FLAG_ACTIVITY_NEW_TASK, Intent,
)
from device_farm.virtual.ui.views import Bounds, ViewNode

PACKAGE = "com.google.android.apps.nexuslauncher"
ACTIVITY = "com.google.android.apps.nexuslauncher.NexusLauncherActivity"
COLUMNS, CELL_HEIGHT, GRID_TOP = 4, 330, 300


class LauncherActivity(Activity):
    def build(self, screen: Bounds) -> list[ViewNode]:
        icons: list[ViewNode] = []
        apps = [a for a in self.system.apps.values() if a.LAUNCHER_ACTIVITY and a is not self.app]
        cell_width = screen.right // COLUMNS
        rows = max(1, -(-len(apps) // COLUMNS))
        # a smaller display (`wm size`) packs the rows tighter, as the launcher's grid does
        cell_height = max(1, min(CELL_HEIGHT, (screen.bottom - screen.top - GRID_TOP) // rows))
        for i, app in enumerate(apps):
            row, col = divmod(i, COLUMNS)
            top = screen.top + GRID_TOP + row * cell_height
            icons.append(ViewNode(
                "android.widget.TextView",
                Bounds(col * cell_width, top, (col + 1) * cell_width, top + cell_height),
                text=app.label, content_desc=app.label, clickable=True, focusable=True,
                long_clickable=True, on_click=lambda app=app: self._open(app),
            ))
        workspace = ViewNode(
            "android.view.ViewGroup", screen,
            resource_id=f"{PACKAGE}:id/workspace", scrollable=False, children=icons,
        )
        return [workspace]

    def _open(self, app: App) -> None:
        self.system.start_activity(Intent(
            ACTION_MAIN, package=app.package, categories=[CATEGORY_LAUNCHER],
            flags=FLAG_ACTIVITY_NEW_TASK,
        ))

    def on_back(self) -> bool:
        return True


class Launcher(App):
    PACKAGE = PACKAGE
    LABEL = "Pixel Launcher"
    ACTIVITIES = (ACTIVITY,)
    VERSION_NAME = "14"
    VERSION_CODE = 34

    def resolve(self, intent: Intent) -> str | None:
        if intent.action == ACTION_MAIN and CATEGORY_HOME in intent.categories:
            return ACTIVITY
        return None

    def launch(self, activity: str, intent: Intent) -> Activity | None:
        return LauncherActivity(self, activity, intent)
