"""List and read tools say what they show of how many and reach the rest, on the virtual phone
through the real adb server: 25 texts, 25 calls, an 8,893-character file and a folder of 130
files are seeded, and every item (every character) is read back a page at a time."""

from __future__ import annotations

from device_farm.android import content_insert
from planner_runtime.contract import FeedbackStatus, ToolCall
from planner_runtime.harness.toolbox import default_toolset
from planner_runtime.harness.tools import ToolContext

SMS = "content://sms"
CALLS = "content://call_log/calls"


def _tool(device, name: str, **arguments: object) -> dict:
    feedback = default_toolset().execute(ToolCall(name=name, arguments=arguments), ToolContext(device=device))
    assert feedback.status is FeedbackStatus.ok, feedback
    return feedback.result


def _pages(device, name: str, key: str, **arguments: object) -> tuple[list[dict], list[dict]]:
    """Every item, following ``more``'s offset from the first page to the last; and the pages."""
    items, pages, offset = [], [], 0
    while True:
        result = _tool(device, name, offset=offset, **arguments)
        pages.append(result)
        items += result[key]
        if "more" not in result:
            return items, pages
        offset = int(result["more"].rsplit("offset=", 1)[1].split()[0])


def test_read_messages_says_there_are_more_and_reaches_the_oldest(device):
    device.shell(["content", "delete", "--uri", SMS])
    for i in range(25):
        content_insert(device, f"{SMS}/inbox", {"address": "+15550100", "body": f"text {i}", "type": 1, "date": 1_790_000_000_000 + i})

    first = _tool(device, "read_messages")
    assert len(first["messages"]) == 5 and first["total"] == 25
    assert "offset=5" in first["more"]

    texts, pages = _pages(device, "read_messages", "messages", limit=20)
    assert [m["text"] for m in texts] == [f"text {i}" for i in reversed(range(25))]
    assert [len(p["messages"]) for p in pages] == [20, 5]


def test_recent_calls_says_there_are_more_and_reaches_the_oldest(device):
    device.shell(["content", "delete", "--uri", CALLS])
    for i in range(25):
        content_insert(device, CALLS, {"number": f"+1555{i:04d}", "type": 3, "date": 1_790_000_000_000 + i, "duration": 0})

    first = _tool(device, "recent_calls", kind="missed")
    assert len(first["calls"]) == 5 and first["total"] == 25 and "offset=5" in first["more"]

    calls, _ = _pages(device, "recent_calls", "calls", kind="missed", limit=20)
    assert [c["number"] for c in calls] == [f"+1555{i:04d}" for i in reversed(range(25))]


def test_read_text_file_gives_its_size_and_reads_on_to_the_end(device):
    lines = [f"line {i:04d}: the booking reference is at the very end\n" for i in range(200)]
    text = "".join(lines) + "Booking code: QX7-22B\n"
    text = text[len(text) - 8893:]
    device.push(text.encode(), "/sdcard/Download/long.txt")

    first = _tool(device, "read_text_file", path="Downloads/long.txt")
    assert first["size"] == 8893 and len(first["text"]) == 4000 and "offset=4000" in first["more"]

    pieces, pages = [], []
    offset = 0
    while True:
        page = _tool(device, "read_text_file", path="Downloads/long.txt", offset=offset)
        pages.append(page)
        pieces.append(page["text"])
        if "more" not in page:
            break
        offset = int(page["more"].rsplit("offset=", 1)[1].split()[0])
    assert "".join(pieces) == text and len(pages) == 3
    assert pages[-1]["text"].endswith("Booking code: QX7-22B\n")


def test_list_files_says_how_to_get_the_entries_past_a_hundred(device):
    device.shell(["rm", "-rf", "/sdcard/Download/many"])
    device.shell(["mkdir", "-p", "/sdcard/Download/many"])
    names = [f"scan_{i:03d}.pdf" for i in range(130)]
    for name in names:
        device.push(b"%PDF", f"/sdcard/Download/many/{name}")

    first = _tool(device, "list_files", folder="Downloads/many")
    assert len(first["entries"]) == 100 and first["count"] == 130 and "offset=100" in first["more"]

    entries, _ = _pages(device, "list_files", "entries", folder="Downloads/many")
    assert sorted(e["name"] for e in entries) == names
