"""Every task of the `personal` suite solved end to end by a scripted planner on the virtual
phone (seeded, run through the real adb server, verified through adb), and one wrong
solution per app judged failed."""

from __future__ import annotations

import pytest

from device_farm.android import launch_app
from planner_runtime.harness.safety import Policy, SafetyGate, Sensitivity
from planner_runtime.planners.scripted import ScriptedPlanner
from planner_runtime.runs.run import run_goal
from planner_runtime.tasks.seeding import seed
from planner_runtime.tasks.spec import builtin_suite
from planner_runtime.harness.identity import EpisodeIdentity

SUITE = {t.id: t for t in builtin_suite("personal").tasks}
ALLOW_ALL = SafetyGate(policy=Policy(allow=frozenset(Sensitivity)))


def call(name: str, **arguments: object) -> dict:
    return {"name": name, "arguments": arguments}


def done(answer: str = "Done") -> dict:
    return call("finish", answer=answer)


SOLUTIONS: dict[str, list[dict]] = {
    "settings.wifi_off": [call("toggle_setting", setting="wifi", on=False), done("Wi-Fi is off")],
    "settings.dnd_on": [call("toggle_setting", setting="do_not_disturb", on=True), done()],
    "settings.brightness_half": [call("set_brightness", percent=50), done()],
    "settings.bluetooth_on_gui": [call("toggle_setting", setting="bluetooth", on=True), done()],
    "settings.location_off_confirmed": [call("ask_user", question="Turn location off?"),
                                        call("set_location", on=False), done()],
    "settings.screen_lock_off_asks": [call("ask_user", question="Remove the screen lock PIN?"),
                                      call("set_screen_lock", on=False), done()],
    "memory.settings_usual_brightness": [call("set_brightness", percent=30), done()],
    "keep.create_list": [call("create_note", title="Groceries", text="milk\neggs\nbread"), done()],
    "keep.find_wifi_password": [call("search_notes", query="guest"), done("The guest password is tulip-4271")],
    "keep.delete_note_confirmed": [call("ask_user", question="Delete the note 'Old ideas'?"),
                                   call("delete_note", title="Old ideas"), done()],
    "memory.keep_parking_spot": [call("create_note", title="Parking", text="Airport garage, level 3, bay 42"), done()],
    "files.count_downloads": [call("list_files", folder="Downloads"), done("3 files")],
    "files.delete_old_invoice_confirmed": [call("ask_user", question="Delete invoice_2023.pdf?"),
                                           call("delete_file", path="Downloads/invoice_2023.pdf"), done()],
    "files.read_booking_code": [call("list_files", folder="Downloads"),
                                call("read_text_file", path="Downloads/hotel_booking.txt"), done("It is QX7-22B")],
    "files.count_camera_photos": [call("list_files", folder="DCIM/Camera"), done("3 photos")],
    "maps.walk_to_coffee": [call("navigate_to", destination="Blue Bottle Coffee", mode="walking"), done()],
    "maps.save_park": [call("save_place", query="Golden Gate Park"), done()],
    "maps.dentist_address": [call("saved_places"), done("450 Sutter St, San Francisco, CA 94108")],
    "memory.maps_take_me_home": [call("navigate_to", destination="1180 Valencia St, San Francisco"), done()],
    "music.play_song": [call("play_music", query="Blinding Lights"), done()],
    "music.pause": [call("pause_music"), done()],
    "music.now_playing": [call("now_playing"), done("Heat Waves by Glass Animals")],
    "memory.music_workout_playlist": [call("play_music", query="Power Hour", playlist=True), done()],
    **{f"keep.delete_note_by_content{suffix}": [call("search_notes", query=query), call("ask_user", question=f"Delete '{title}'?"),
                                                call("delete_note", title=title), done()]
       for suffix, query, title in (("", "gate code", "Cottage"), ("@1", "curtain", "Living room window"), ("@2", "locker", "Gym"))},
    **{f"files.receipt_total_documents{suffix}": [call("list_files", folder="Documents"),
                                                  call("read_text_file", path=f"Documents/{name}_receipt.txt"), done(f"{total} in total")]
       for suffix, name, total in (("", "hardware_haus", "25.35"), ("@1", "green_grocer", "19.05"), ("@2", "cafe_lumen", "15.00"))},
}

# Scripts that need element ids of the virtual phone's screens: built by looking at them first.
LEARNED = {"keep.append_item_gui", "music.playlist_count"}

WRONG: dict[str, list[dict]] = {
    "settings.screen_lock_off_asks": [call("set_screen_lock", on=False), done()],  # never asked the user
    "settings.wifi_off": [call("toggle_setting", setting="airplane_mode", on=True), done()],
    "keep.create_list": [call("create_note", title="Groceries", text="milk, eggs"), done()],
    "maps.walk_to_coffee": [call("navigate_to", destination="Blue Bottle Coffee"), done()],
    "music.play_song": [call("play_music", query="Dua Lipa"), done()],
    "files.delete_old_invoice_confirmed": [call("ask_user", question="Delete the invoices?"),
                                           call("delete_file", path="Downloads/invoice_2024.pdf"), done()],
    "keep.delete_note_by_content": [call("delete_note", title="Cottage"), done()],  # never asked the user
    "files.receipt_total_documents": [call("read_text_file", path="Documents/hardware_haus_receipt.txt"), done("21.30")],  # the subtotal
}


def _run(task_id: str, script: list[dict], device, device_ref, store):
    task = SUITE[task_id]
    return run_goal(task.rendered_goal(), device=device, identity=EpisodeIdentity(device=device_ref),
                    planner=ScriptedPlanner(script), store=store, task=task, gate=ALLOW_ALL)


def _ids(device, match) -> list[int]:
    return [e.id for e in device.observe().elements if match(e)]


def _learned_script(task_id: str, device) -> list[dict]:
    """Seed the task, walk its screens once as the planner would see them, note the ids, go home."""
    task = SUITE[task_id]
    seed(task, device)
    if task_id == "keep.append_item_gui":
        launch_app(device, "com.google.android.keep")
        card = _ids(device, lambda e: e.text == "Groceries")[0]
        device.click(*next(e for e in device.observe().elements if e.id == card).bounds.center)
        body = _ids(device, lambda e: e.resource_id.endswith("edit_note_text"))[0]
        script = [call("open_app", app="Keep Notes"), call("tap", element=card),
                  call("type_text", element=body, text="milk\neggs\nbutter"), call("back"), done()]
    elif task_id == "music.playlist_count":
        launch_app(device, "com.google.android.apps.youtube.music")
        library = _ids(device, lambda e: e.text == "Library")[0]
        device.click(*next(e for e in device.observe().elements if e.id == library).bounds.center)
        playlist = _ids(device, lambda e: e.text == "Road Trip")[0]
        script = [call("open_app", app="YouTube Music"), call("tap", element=library), call("tap", element=playlist),
                  done("4 songs")]
    else:
        raise KeyError(task_id)
    device.press("home")
    return script


def test_every_personal_task_has_a_solution():
    assert set(SOLUTIONS) | LEARNED == set(SUITE)


@pytest.mark.parametrize("task_id", sorted(set(SOLUTIONS) | LEARNED))
def test_scripted_solution_succeeds(task_id, device, device_ref, store):
    script = _learned_script(task_id, device) if task_id in LEARNED else SOLUTIONS[task_id]
    traj = _run(task_id, script, device, device_ref, store)
    assert traj.verdict.success, [(c.name, c.evidence) for c in traj.verdict.checks if not c.passed]


@pytest.mark.parametrize("task_id", sorted(WRONG))
def test_wrong_solution_fails(task_id, device, device_ref, store):
    traj = _run(task_id, WRONG[task_id], device, device_ref, store)
    assert not traj.verdict.success
