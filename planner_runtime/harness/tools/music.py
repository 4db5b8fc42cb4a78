"""Music tools over Android's media mechanisms: ``play_music`` sends
``MediaStore.INTENT_ACTION_MEDIA_PLAY_FROM_SEARCH`` (what voice assistants use; a playlist
focus when asked for one), ``pause_music`` taps the player's Pause button, and both read the
outcome from ``dumpsys media_session`` (PlaybackState 3 = playing, 2 = paused), as does
``now_playing``."""

from __future__ import annotations

import re

from pydantic import Field

from device_farm.android import Intent, launch_app, start_activity
from device_farm.errors import ShellCommandError
from planner_runtime.contract import ErrorCode
from planner_runtime.harness.apps import app_named
from planner_runtime.harness.tools import AppTool, ToolArgs, ToolContext, ToolFailure, ToolResult
from planner_runtime.harness.tools.gui import wait_for_screen

APP = app_named("YouTube Music")

PLAY_FROM_SEARCH = "android.media.action.MEDIA_PLAY_FROM_SEARCH"
YT_MUSIC = "com.google.android.apps.youtube.music/com.google.android.apps.youtube.music.activities.MusicActivity"
STATES = {"3": "playing", "2": "paused", "1": "stopped"}
_SESSION = re.compile(r"package=(\S+).*?state=PlaybackState \{state=(\d+).*?metadata: size=\d+, description=([^\n]*)", re.S)


def sessions(ctx: ToolContext) -> list[dict[str, str]]:
    """Media sessions from ``dumpsys media_session``: package, state, description."""
    text = ctx.device.shell(["dumpsys", "media_session"]).output
    return [{"package": p, "state": STATES.get(s, s), "description": d.strip()} for p, s, d in _SESSION.findall(text)]


def _session(ctx: ToolContext, package: str) -> dict[str, str] | None:
    return next((s for s in sessions(ctx) if s["package"] == package), None)


class PlayMusicArgs(ToolArgs):
    query: str = Field(min_length=1, description="Song, artist, album or playlist name")
    playlist: bool = Field(default=False, description="true when the query names one of the user's playlists")


class PlayMusic(AppTool):
    name = "play_music"
    app = APP.name
    description = "Play a song, artist or playlist in the music app."
    Args = PlayMusicArgs

    def act(self, ctx: ToolContext, args: PlayMusicArgs, package: str) -> ToolResult:
        extras = {"query": args.query}
        if args.playlist:
            extras["android.intent.extra.focus"] = "vnd.android.cursor.item/playlist"
        try:
            start_activity(ctx.device, Intent(action=PLAY_FROM_SEARCH, component=YT_MUSIC if package in YT_MUSIC else None,
                                              extras=extras))
        except ShellCommandError as exc:
            raise ToolFailure(ErrorCode.action_failed, f"the music app refused: {exc.output.strip()[:200]}") from exc
        session = _session(ctx, package)
        if session is None or session["state"] != "playing":
            raise ToolFailure(ErrorCode.element_not_found, f"nothing matching {args.query!r} is playing; try another query")
        return ToolResult(result={"now_playing": session["description"]}, observe=True)


class PauseMusic(AppTool):
    name = "pause_music"
    app = APP.name
    description = "Pause the music that is playing."

    def act(self, ctx: ToolContext, args: object, package: str) -> ToolResult:
        session = _session(ctx, package)
        if session is None or session["state"] != "playing":
            return ToolResult(result={"paused": False, "note": "nothing was playing"})
        launch_app(ctx.device, package)
        screen = wait_for_screen(ctx, lambda s: any(e.description == "Pause" for e in s.elements), timeout=3.0)
        pause = next((e for e in screen.elements if e.description == "Pause"), None)
        if pause is None:
            raise ToolFailure(ErrorCode.element_not_found, "the player shows no Pause button")
        ctx.device.click(*pause.bounds.center)
        ctx.observe()
        after = _session(ctx, package)
        return ToolResult(result={"paused": bool(after and after["state"] == "paused"),
                                  "track": session["description"]}, observe=True)


class NowPlaying(AppTool):
    name = "now_playing"
    app = APP.name
    description = "What the music app is playing now (title, artist, playlist) and whether it is paused."

    def act(self, ctx: ToolContext, args: object, package: str) -> ToolResult:
        found = sessions(ctx)
        return ToolResult(result=found or {"note": "no media is playing"})


TOOLS = (PlayMusic, PauseMusic, NowPlaying)
