"""Keep Notes tools. ``create_note`` shares text to Keep with Android's
``ACTION_SEND`` (``text/plain``, the subject as the title) — what any app's Share button does —
and Keep files it as a new note. ``search_notes`` and ``delete_note`` go through Keep's notes
provider (``content://com.google.android.keep/notes``), which the virtual phone exposes; on a
phone whose Keep keeps it private they fail with feedback and the planner reads the screen.
"""

from __future__ import annotations

from pydantic import Field

from device_farm.android import Intent, content_query, start_activity
from device_farm.errors import ShellCommandError
from planner_runtime.contract import ErrorCode
from planner_runtime.harness.apps import app_named
from planner_runtime.harness.safety import Sensitivity
from planner_runtime.harness.tools import AppTool, ToolArgs, ToolContext, ToolFailure, ToolResult
from planner_runtime.harness.tools.gui import wait_for_screen
from planner_runtime.harness.tools.provider import sql_text

APP = app_named("Keep Notes")

NOTES_URI = "content://com.google.android.keep/notes"
SHOWN = 20  # notes one answer carries; past that the answer says how many matched
SHARE_RECEIVER = "com.google.android.keep/.activities.ShareReceiverActivity"


def _notes(ctx: ToolContext, where: str) -> list[dict[str, str | None]]:
    try:
        # the body last: Android's row format is only ambiguous for a value before another column
        return content_query(ctx.device, NOTES_URI, projection=["_id", "pinned", "title", "text"],
                             where=f"trashed=0 AND ({where})", sort="pinned DESC, modified DESC")
    except ShellCommandError as exc:
        raise ToolFailure(ErrorCode.action_failed, f"Keep's notes could not be read: {exc.output.strip()[:200]}") from exc


class CreateNoteArgs(ToolArgs):
    title: str = Field(default="", description="Note title (may be empty)")
    text: str = Field(min_length=1, description="The note's body")


class CreateNote(AppTool):
    name = "create_note"
    app = APP.name
    description = "Create a note in Keep Notes with a title and text."
    Args = CreateNoteArgs

    def act(self, ctx: ToolContext, args: CreateNoteArgs, package: str) -> ToolResult:
        extras = {"android.intent.extra.TEXT": args.text}
        if args.title:
            extras["android.intent.extra.SUBJECT"] = args.title
        try:
            start_activity(ctx.device, Intent(action="android.intent.action.SEND", mime_type="text/plain",
                                              component=SHARE_RECEIVER, extras=extras))
        except ShellCommandError as exc:
            raise ToolFailure(ErrorCode.action_failed, f"Keep did not take the note: {exc.output.strip()[:200]}") from exc
        wait_for_screen(ctx, lambda s: any(e.text == args.text for e in s.elements), timeout=3.0)
        return ToolResult(result={"created": args.title or args.text[:40]}, observe=True)


class SearchNotesArgs(ToolArgs):
    query: str = Field(default="", description="Words to look for in titles and text; empty lists every note")


class SearchNotes(AppTool):
    name = "search_notes"
    app = APP.name
    description = (f"Find notes in Keep Notes whose title or text contains the words; returns their titles and whole text "
                   f"(the first {SHOWN}, pinned then newest, and how many more matched).")
    Args = SearchNotesArgs

    def act(self, ctx: ToolContext, args: SearchNotesArgs, package: str) -> ToolResult:
        like = sql_text(f"%{args.query}%")
        rows = _notes(ctx, f"title LIKE {like} OR text LIKE {like}")
        found: dict[str, object] = {"notes": [{"title": r["title"], "text": r["text"]} for r in rows[:SHOWN]]}
        if len(rows) > SHOWN:
            found["more"] = (f"showing the first {SHOWN} of {len(rows)} matching notes (pinned, then newest); "
                             "search with a more distinctive word to find the others")
        return ToolResult(result=found)


class DeleteNoteArgs(ToolArgs):
    title: str = Field(min_length=1, description="The note's title as shown in Keep")


class DeleteNote(AppTool):
    name = "delete_note"
    app = APP.name
    description = "Move a Keep note to the trash by its title (asks the user first)."
    Args = DeleteNoteArgs
    sensitive = Sensitivity.delete

    def act(self, ctx: ToolContext, args: DeleteNoteArgs, package: str) -> ToolResult:
        where = f"title={sql_text(args.title)}"
        if not _notes(ctx, where):
            raise ToolFailure(ErrorCode.element_not_found, f"no note titled {args.title!r}")
        result = ctx.device.shell(["content", "update", "--uri", NOTES_URI, "--bind", "trashed:i:1", "--where", where])
        if not result.ok:
            raise ToolFailure(ErrorCode.action_failed, f"Keep refused: {result.output.strip()[:200]}")
        return ToolResult(result={"trashed": args.title})


TOOLS = (CreateNote, SearchNotes, DeleteNote)
