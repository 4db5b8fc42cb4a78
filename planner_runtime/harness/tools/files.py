"""File tools over the phone's shared storage, through the same adb shell every Android phone
has (`ls -l`, `cat`, `rm` under /sdcard), so what they see is what Files by Google shows.
``delete_file`` goes through the safety gate (``Sensitivity.delete``). A long folder or file is
shown a page at a time, each saying what it shows of how much and the offset that reads on."""

from __future__ import annotations

import posixpath

from pydantic import Field

from planner_runtime.contract import ErrorCode
from planner_runtime.harness.apps import app_named
from planner_runtime.harness.safety import Sensitivity
from planner_runtime.harness.tools import Tool, ToolArgs, ToolContext, ToolFailure, ToolResult
from planner_runtime.harness.tools.provider import page, text_page

APP = app_named("Files")

LIST_PAGE = 100  # entries per list_files call
READ_PAGE = 4000  # characters per read_text_file call, at most

FOLDERS = {"download": "/sdcard/Download", "downloads": "/sdcard/Download", "dcim": "/sdcard/DCIM",
           "camera": "/sdcard/DCIM/Camera", "pictures": "/sdcard/Pictures", "screenshots": "/sdcard/Pictures/Screenshots",
           "documents": "/sdcard/Documents", "music": "/sdcard/Music", "internal storage": "/sdcard"}


def phone_path(name: str) -> str:
    """An absolute /sdcard path for a folder name ("Downloads"), a relative path or an absolute one."""
    key = name.strip().strip("/")
    if key.lower() in FOLDERS:
        return FOLDERS[key.lower()]
    if name.startswith("/"):
        path = posixpath.normpath(name)
    else:
        head, _, rest = key.partition("/")
        path = posixpath.join(FOLDERS.get(head.lower(), f"/sdcard/{head}"), rest) if rest else FOLDERS.get(
            head.lower(), f"/sdcard/{head}")
    if ".." in path.split("/") or not (path == "/sdcard" or path.startswith(("/sdcard/", "/storage/emulated/0/"))):
        raise ToolFailure(ErrorCode.invalid_arguments, f"{name!r} is not in the phone's shared storage (/sdcard)")
    return path


class ListFilesArgs(ToolArgs):
    folder: str = Field(description="Folder such as 'Downloads', 'DCIM/Camera', 'Pictures' or a /sdcard path")
    offset: int = Field(default=0, ge=0, description=f"Skip this many entries first ({LIST_PAGE} are listed per call)")


class ListFiles(Tool):
    name = "list_files"
    app = APP.name
    needs_app = False  # works over the shell without a file manager
    description = "List the files and folders in a folder of the phone's storage, with sizes and dates."
    Args = ListFilesArgs

    def run(self, ctx: ToolContext, args: ListFilesArgs) -> ToolResult:
        path = phone_path(args.folder)
        result = ctx.device.shell(["ls", "-l", path])
        if not result.ok:
            raise ToolFailure(ErrorCode.element_not_found, f"no folder {path}: {result.output.strip()[:200]}")
        entries = []
        for line in result.output.splitlines():
            parts = line.split(None, 7)
            if len(parts) == 8 and not line.startswith("total"):
                entries.append({"name": parts[7], "folder": parts[0].startswith("d"),
                                "size": int(parts[4]) if parts[4].isdigit() else None, "modified": f"{parts[5]} {parts[6]}"})
        shown, info = page(entries, args.offset, LIST_PAGE, "entries")
        return ToolResult(result={"folder": path, "entries": shown, "count": len(entries), **info})


class ReadTextFileArgs(ToolArgs):
    path: str = Field(description="The text file, e.g. 'Downloads/booking.txt' or '/sdcard/Download/booking.txt'")
    offset: int = Field(default=0, ge=0, description="Start at this character, to read on past an earlier call's text")
    length: int = Field(default=READ_PAGE, ge=1, le=READ_PAGE, description="How many characters to read")


class ReadTextFile(Tool):
    name = "read_text_file"
    app = APP.name
    needs_app = False  # works over the shell without a file manager
    description = "Read a text file from the phone's storage, up to 4,000 characters per call (offset reads on); says its size."
    Args = ReadTextFileArgs

    def run(self, ctx: ToolContext, args: ReadTextFileArgs) -> ToolResult:
        path = phone_path(args.path)
        result = ctx.device.shell(["cat", path])
        if not result.ok:
            raise ToolFailure(ErrorCode.element_not_found, f"cannot read {path}: {result.output.strip()[:200]}")
        return ToolResult(result={"path": path, **text_page(result.output, args.offset, args.length)})


class DeleteFileArgs(ToolArgs):
    path: str = Field(description="The file to delete, e.g. 'Downloads/old_invoice.pdf'")


class DeleteFile(Tool):
    name = "delete_file"
    app = APP.name
    needs_app = False  # works over the shell without a file manager
    description = "Delete one file from the phone's storage for good (asks the user first)."
    Args = DeleteFileArgs
    sensitive = Sensitivity.delete

    def run(self, ctx: ToolContext, args: DeleteFileArgs) -> ToolResult:
        path = phone_path(args.path)
        if path in set(FOLDERS.values()):
            raise ToolFailure(ErrorCode.invalid_arguments, f"{path} is a folder; delete_file removes one file")
        result = ctx.device.shell(["rm", path])
        if not result.ok:
            raise ToolFailure(ErrorCode.element_not_found, f"could not delete {path}: {result.output.strip()[:200]}")
        return ToolResult(result={"deleted": path})


TOOLS = (ListFiles, ReadTextFile, DeleteFile)
