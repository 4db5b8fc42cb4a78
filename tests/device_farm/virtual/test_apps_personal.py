"""Personal apps on the virtual phone (Settings, Keep Notes, Files, Maps, YouTube Music),
driven only through adb: `am start` intents, `content`/`settings`/`dumpsys` and files, and
the UI through uiautomator2."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import uiautomator2 as u2

SETTINGS = "com.android.settings"


def _texts(d: u2.Device, resource_id: str = "android:id/title") -> list[str]:
    """Texts of the views with ``resource_id`` on screen, top to bottom (one hierarchy dump)."""
    return [n.get("text", "") for n in ET.fromstring(d.dump_hierarchy().encode()).iter("node")
            if n.get("resource-id") == resource_id]


def test_settings_switch_and_settings_get_agree(virtual_phone):
    adb = virtual_phone.device
    assert adb.shell2("am start -a android.settings.WIFI_SETTINGS").returncode == 0
    d = u2.connect(adb)
    assert d.app_current()["package"] == SETTINGS
    wifi = d(text="Wi-Fi").right(className="android.widget.Switch")
    assert wifi.info["checked"] is True
    wifi.click()
    assert adb.shell("settings get global wifi_on") == "0"
    assert d(text="Wi-Fi").right(className="android.widget.Switch").info["checked"] is False
    adb.shell("svc wifi enable")  # what the shell writes, the page shows
    assert d(text="Wi-Fi").right(className="android.widget.Switch").info["checked"] is True
    adb.shell("am start -a android.settings.ZEN_MODE_SETTINGS")
    d(text="Do Not Disturb", resourceId="android:id/title").click()
    assert adb.shell("settings get global zen_mode") == "1"
    assert d(text="On / Until you turn off").exists
    adb.shell("am start -a android.settings.SECURITY_SETTINGS")
    d(text="Screen lock").right(className="android.widget.Switch").click()
    assert adb.shell("settings get secure lockscreen.disabled") == "1" and d(text="None").exists


def test_settings_homepage_scrolls_and_opens_pages(virtual_phone):
    d = u2.connect(virtual_phone.device)
    d.app_start(SETTINGS)
    assert d(resourceId=f"{SETTINGS}:id/recycler_view").info["scrollable"] is True
    assert "Location" not in _texts(d)
    d.swipe(540, 2100, 540, 900)
    assert "Location" in _texts(d) and "Network & internet" not in _texts(d)
    d(text="Location").click()
    assert d(text="Use location").exists
    d(text="Use location").click()
    assert d.shell("settings get secure location_mode").output.strip() == "0"
    d.press("back")
    assert d(text="Security & privacy").exists


def test_app_info_lists_pm_grant_state(virtual_phone):
    adb = virtual_phone.device
    adb.shell("pm grant com.google.android.deskclock android.permission.POST_NOTIFICATIONS")
    adb.shell("am start -a android.settings.APPLICATION_DETAILS_SETTINGS -d package:com.google.android.deskclock")
    d = u2.connect(adb)
    assert d(resourceId=f"{SETTINGS}:id/collapsing_toolbar").get_text() == "Clock"
    assert d(text="Notifications").sibling(resourceId="android:id/summary").get_text() == "Allowed"
    d(text="Camera").click()
    assert "android.permission.CAMERA: granted=true" in adb.shell("dumpsys package com.google.android.deskclock")


KEEP = "com.google.android.keep"
NOTES = "content://com.google.android.keep/notes"


def test_keep_share_text_creates_a_note_and_the_editor_saves_typing(virtual_phone):
    adb = virtual_phone.device
    out = adb.shell2("am start -a android.intent.action.SEND -t text/plain -n "
                     f"{KEEP}/.activities.ShareReceiverActivity --es android.intent.extra.TEXT 'milk and eggs' "
                     "--es android.intent.extra.SUBJECT Groceries")
    assert out.returncode == 0
    assert adb.shell(f"content query --uri {NOTES} --projection title:text") == "Row: 0 title=Groceries, text=milk and eggs"
    d = u2.connect(adb)
    assert d(resourceId=f"{KEEP}:id/editable_title").get_text() == "Groceries"
    d(resourceId=f"{KEEP}:id/edit_note_text").set_text("milk and eggs and butter")
    d.press("back")
    assert "text=milk and eggs and butter" in adb.shell(f"content query --uri {NOTES}")
    d.app_start(KEEP)
    d(description="New text note").click()
    d(resourceId=f"{KEEP}:id/edit_note_text").set_text("call the plumber")
    d(description="Navigate up").click()
    assert d(text="call the plumber").exists and d(text="Groceries").exists


def test_keep_list_scrolls_searches_and_trashes(virtual_phone):
    adb = virtual_phone.device
    adb.shell("; ".join(f"content insert --uri {NOTES} --bind title:s:'Note {i:02d}' --bind text:s:'body {i}' "
                        f"--bind modified:i:{1000 + i}" for i in range(12)))
    d = u2.connect(adb)
    d.app_start(KEEP)
    titles = lambda: _texts(d, f"{KEEP}:id/index_note_title")  # noqa: E731
    assert titles()[0] == "Note 11" and "Note 00" not in titles()
    d.swipe(540, 2000, 540, 600)
    d.swipe(540, 2000, 540, 600)
    assert "Note 00" in titles() and "Note 11" not in titles()
    d(resourceId=f"{KEEP}:id/open_search_bar_text_view").set_text("body 7")
    assert titles() == ["Note 07"]
    d(text="Note 07").click()
    d(description="Delete").click()
    assert "trashed=1" in adb.shell(f"content query --uri {NOTES} --projection trashed --where \"title='Note 07'\"")
    assert not d(text="Note 07").exists


FILES = "com.google.android.apps.nbu.files"


def test_files_shows_pushed_files_and_deletes_after_confirming(virtual_phone, tmp_path):
    adb = virtual_phone.device
    (tmp_path / "scan.pdf").write_bytes(b"%PDF" + b"x" * 31196)
    adb.sync.push(str(tmp_path / "scan.pdf"), "/sdcard/Download/scan_13.pdf")  # what adb push writes shows
    adb.shell("; ".join(f"echo page > /sdcard/Download/scan_{i:02d}.pdf" for i in range(13)))
    assert adb.shell2("am start -a android.intent.action.VIEW_DOWNLOADS").returncode == 0
    d = u2.connect(adb)
    names = lambda: _texts(d, f"{FILES}:id/file_name")  # noqa: E731
    assert d(resourceId=f"{FILES}:id/toolbar_title").get_text() == "Downloads"
    assert names()[0] == "scan_00.pdf" and "scan_13.pdf" not in names()
    assert d(resourceId=f"{FILES}:id/file_list").info["scrollable"] is True
    d.swipe(540, 2000, 540, 400)
    d.swipe(540, 2000, 540, 400)
    assert "scan_13.pdf" in names()
    d(text="scan_13.pdf").click()
    assert d(resourceId=f"{FILES}:id/file_size").get_text() == "31.2 kB"
    d(text="Delete").click()
    assert d(text="Delete this file permanently?").exists
    d(text="Cancel").click()
    assert "scan_13.pdf" in adb.shell("ls /sdcard/Download")
    d(text="Delete").click()
    d(resourceId="android:id/button1").click()
    assert "scan_13.pdf" not in adb.shell("ls /sdcard/Download")
    assert "scan_13.pdf" not in names()


def test_files_images_lists_camera_and_pictures(virtual_phone, tmp_path):
    adb = virtual_phone.device
    (tmp_path / "a.jpg").write_bytes(b"JPEG")
    adb.sync.push(str(tmp_path / "a.jpg"), "/sdcard/DCIM/Camera/IMG_1.jpg")
    adb.sync.push(str(tmp_path / "a.jpg"), "/sdcard/Pictures/Screenshots/Screenshot_1.png")
    adb.sync.push(str(tmp_path / "a.jpg"), "/sdcard/DCIM/Camera/clip.mp4")
    d = u2.connect(adb)
    d.app_start(FILES)
    d(text="Images").click()
    assert sorted(_texts(d, f"{FILES}:id/file_name")) == ["IMG_1.jpg", "Screenshot_1.png"]
    d.press("back")
    d(text="Internal storage").click()
    d(text="DCIM").click()
    d(text="Camera").click()
    assert d(text="clip.mp4").exists


MAPS = "com.google.android.apps.maps"
NAVIGATION = "content://com.google.android.apps.maps/navigation"


def test_maps_geo_intent_place_sheet_directions_and_save(virtual_phone):
    adb = virtual_phone.device
    assert adb.shell2("am start -a android.intent.action.VIEW -d 'geo:0,0?q=Golden%20Gate%20Park'").returncode == 0
    d = u2.connect(adb)
    assert d(resourceId=f"{MAPS}:id/title").get_text() == "Golden Gate Park"
    assert d(resourceId=f"{MAPS}:id/address").get_text().startswith("501 Stanyan St")
    d(text="Save").click()
    assert d(text="Saved").exists
    assert "name=Golden Gate Park" in adb.shell("content query --uri content://com.google.android.apps.maps/saved_places")
    d(text="Directions").click()
    d(text="Walking").click()
    d(text="Start").click()
    assert d(text="Head toward Golden Gate Park").exists
    assert adb.shell(f"content query --uri {NAVIGATION} --projection destination:mode:active") == \
        "Row: 0 destination=Golden Gate Park, mode=w, active=1"
    d(text="Exit").click()
    assert "active=0" in adb.shell(f"content query --uri {NAVIGATION} --projection active")


def test_maps_navigation_intent_search_box_and_saved_tab(virtual_phone):
    adb = virtual_phone.device
    adb.shell2("am start -a android.intent.action.VIEW -d 'google.navigation:q=Ferry+Building&mode=b'")
    assert adb.shell(f"content query --uri {NAVIGATION} --projection destination:mode") == \
        "Row: 0 destination=Ferry Building, mode=b"
    d = u2.connect(adb)
    d.press("back")
    d(resourceId=f"{MAPS}:id/search_omnibox_text_box").set_text("bakery")
    assert d(text="Tartine Bakery").exists
    d(text="Tartine Bakery").click()
    d(text="Save").click()
    d(text="You").click()
    assert d(text="Tartine Bakery").exists and d(text="Saved").exists
    adb.shell2("am start -a android.intent.action.VIEW -d "
               "'https://www.google.com/maps/dir/?api=1&destination=Dolores+Park&travelmode=walking'")
    assert d(text="Walking").info["selected"] is True


MUSIC = "com.google.android.apps.youtube.music"
PLAYER = "content://com.google.android.apps.youtube.music/player"


def test_music_play_from_search_pause_and_media_session(virtual_phone):
    adb = virtual_phone.device
    assert "Sessions Stack - have 0 sessions" in adb.shell("dumpsys media_session")
    out = adb.shell2("am start -a android.media.action.MEDIA_PLAY_FROM_SEARCH --es query 'Blinding Lights'")
    assert out.returncode == 0
    session = adb.shell("dumpsys media_session")
    assert "state=PlaybackState {state=3" in session and "description=Blinding Lights, The Weeknd" in session
    d = u2.connect(adb)
    assert d(resourceId=f"{MUSIC}:id/title").get_text() == "Blinding Lights"
    d(description="Pause").click()
    assert "state=PlaybackState {state=2" in adb.shell("dumpsys media_session")
    assert d(description="Play").exists
    d(description="Next").click()
    assert "title=Levitating, state=playing" in adb.shell(f"content query --uri {PLAYER} --projection title:state")


def test_music_library_playlist_search_and_scroll(virtual_phone):
    adb = virtual_phone.device
    adb.shell("content insert --uri content://com.google.android.apps.youtube.music/playlists --bind name:s:Chill")
    for title in ("Holocene", "Weightless"):
        adb.shell("content insert --uri content://com.google.android.apps.youtube.music/playlist_items "
                  f"--bind playlist:s:Chill --bind title:s:{title}")
    d = u2.connect(adb)
    d.app_start(MUSIC)
    assert d(resourceId=f"{MUSIC}:id/results_list").info["scrollable"] is True
    assert not d(text="Anti-Hero").exists
    for _ in range(4):
        d.swipe(540, 2000, 540, 500)
    assert d(text="Anti-Hero").exists
    d(text="Library").click()
    assert d(text="Playlist • 2 songs").exists
    d(text="Chill").click()
    d(text="Play").click()
    assert adb.shell(f"content query --uri {PLAYER} --projection title:playlist:state") == \
        "Row: 0 title=Holocene, playlist=Chill, state=playing"
    assert d(resourceId=f"{MUSIC}:id/mini_player_title").get_text() == "Holocene"
    d(description="Search").click()
    d(resourceId=f"{MUSIC}:id/search_edit_text").set_text("Dua Lipa")
    assert _texts(d, f"{MUSIC}:id/title") == ["Levitating", "Don't Start Now"]
