"""A count task's answer does not depend on what the phone held before: the built-in count tasks
empty their folder before seeding it."""

from __future__ import annotations

import pytest

from planner_runtime.tasks.seeding import seed, write_file
from planner_runtime.tasks.spec import builtin_suite

BUILTIN = {t.id: t for t in builtin_suite().tasks}


@pytest.mark.parametrize("task_id, folder, left", [
    ("files.count_downloads", "/sdcard/Download", ["boarding_pass.pdf", "lease.pdf", "menu.jpg"]),
    ("files.count_camera_photos", "/sdcard/DCIM/Camera",
     ["IMG_20240512_093011.jpg", "IMG_20240601_181502.jpg", "PXL_20240602_070001.jpg", "VID_20240602_070500.mp4"]),
])
def test_a_count_task_empties_its_folder_before_seeding(device, task_id, folder, left):
    write_file(device, f"{folder}/left_by_an_earlier_run.jpg", b"JPEG")
    write_file(device, f"{folder}/old/nested.txt", b"old")
    seed(BUILTIN[task_id], device)
    listed = device.shell(["ls", folder])
    assert listed.ok and sorted(listed.output.split()) == left


def test_the_reset_plan_and_the_audit_warning_name_the_emptied_folder():
    from planner_runtime.runs.run import reset_plan
    from planner_runtime.runs.audit import what_setup_resets

    task = BUILTIN["files.count_downloads"]
    assert reset_plan(task)[0] == "delete everything in /sdcard/Download"
    assert "empties folders /sdcard/Download" in what_setup_resets([task])
