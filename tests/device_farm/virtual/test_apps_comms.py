"""Messages, Phone, Gmail and Calendar on the virtual phone, driven only through adb: intents
with `am start`, their providers with `content`, and the UI with uiautomator2."""

from __future__ import annotations

import uiautomator2 as u2

MESSAGES = "com.google.android.apps.messaging"
SMS = "content://sms"


def _sms(d, sender: str, body: str, box: str = "inbox") -> None:
    out = d.shell2(f"content insert --uri {SMS}/{box} --bind address:s:'{sender}' --bind body:s:'{body}'")
    assert out.returncode == 0, out.output


def test_sendto_opens_a_conversation_and_send_writes_the_sent_box(virtual_phone):
    d = virtual_phone.device
    _sms(d, "+15550123", "Are we still on for lunch?")
    out = d.shell2("am start -a android.intent.action.SENDTO -d smsto:+15550123 --es sms_body 'Yes, 12:30'")
    assert out.returncode == 0 and "act=android.intent.action.SENDTO" in out.output
    ui = u2.connect(d)
    assert ui.app_current()["activity"].endswith("ConversationActivity")
    assert ui(resourceId=f"{MESSAGES}:id/message_text", text="Are we still on for lunch?").exists
    assert ui(resourceId=f"{MESSAGES}:id/compose_message_text").get_text() == "Yes, 12:30"
    ui(description="Send SMS").click()
    assert d.shell(f"content query --uri {SMS}/sent --projection address:body:type") \
        == "Row: 0 address=+15550123, body=Yes, 12:30, type=2"
    assert d.shell(f"content query --uri {SMS}/inbox --projection body") == "Row: 0 body=Are we still on for lunch?"
    assert ui(resourceId=f"{MESSAGES}:id/message_text", text="Yes, 12:30").exists


def test_conversation_list_shows_threads_by_contact_name_and_opens_them(virtual_phone):
    d = virtual_phone.device
    d.shell("content insert --uri content://com.android.contacts/raw_contacts "
            "--bind display_name:s:'Ada Lovelace' --bind phone:s:'+1 555 0100'")
    for i in range(12):
        _sms(d, f"+1555020{i:02d}", f"note {i}")
    _sms(d, "+1 555 0100", "See you at the lab")
    d.shell(f"am start -n {MESSAGES}/.ui.ConversationListActivity")
    ui = u2.connect(d)
    names = ui(resourceId=f"{MESSAGES}:id/conversation_name")
    assert names[0].get_text() == "Ada Lovelace"  # newest thread first, named from Contacts
    assert 4 < names.count < 13  # only what fits; the list scrolls
    assert ui(resourceId=f"{MESSAGES}:id/list").info["scrollable"]
    ui(text="Ada Lovelace").click()
    assert ui(resourceId=f"{MESSAGES}:id/conversation_title").get_text() == "Ada Lovelace"
    assert d.shell(f"content query --uri {SMS} --where \"address='+1 555 0100'\" --projection read") == "Row: 0 read=1"
    ui.press("back")
    assert ui(resourceId=f"{MESSAGES}:id/start_chat_fab").exists


def test_start_chat_typed_recipient_and_text(virtual_phone):
    d = virtual_phone.device
    d.shell(f"monkey -p {MESSAGES} -c android.intent.category.LAUNCHER 1")
    ui = u2.connect(d)
    assert ui(textContains="start a new conversation").exists
    ui(text="Start chat").click()
    ui(resourceId=f"{MESSAGES}:id/recipient_text_view").set_text("+15550999")
    ui(resourceId=f"{MESSAGES}:id/compose_message_text").set_text("Hello there")
    ui(description="Send SMS").click()
    assert d.shell(f"content query --uri {SMS}/sent --projection address:body") \
        == "Row: 0 address=+15550999, body=Hello there"


DIALER = "com.google.android.dialer"
CALLS = "content://call_log/calls"


def test_dial_prefills_the_dialpad_and_the_call_button_places_the_call(virtual_phone):
    d = virtual_phone.device
    out = d.shell2("am start -a android.intent.action.DIAL -d tel:5550142")
    assert out.returncode == 0
    ui = u2.connect(d)
    assert ui(resourceId=f"{DIALER}:id/digits").get_text() == "5550142"
    assert d.shell(f"content query --uri {CALLS}") == "No result found."  # DIAL never calls
    ui(description="7").click()
    ui(description="backspace").click()
    ui(description="dial").click()
    assert ui(resourceId=f"{DIALER}:id/contactgrid_status_text").get_text() == "Calling…"
    assert d.shell(f"content query --uri {CALLS} --projection number:type") == "Row: 0 number=5550142, type=2"
    ui(description="End call").click()
    assert ui(resourceId=f"{DIALER}:id/primary_text", text="5550142").exists  # back on Recents


def test_call_intent_logs_a_call_named_from_contacts_and_recents_lists_the_log(virtual_phone):
    d = virtual_phone.device
    d.shell("content insert --uri content://com.android.contacts/raw_contacts "
            "--bind display_name:s:'Grace Hopper' --bind phone:s:'+1 555 0199'")
    for i in range(15):
        d.shell(f"content insert --uri {CALLS} --bind number:s:+1555030{i:02d} --bind type:i:{1 + i % 3}")
    d.shell("am start -a android.intent.action.CALL -d tel:+15550199")
    assert d.shell(f"content query --uri {CALLS} --where type=2 --projection name --sort '_id DESC'").splitlines()[0] \
        == "Row: 0 name=Grace Hopper"
    ui = u2.connect(d)
    ui.press("back")  # a call is not left by back
    assert ui(description="End call").exists
    ui(description="End call").click()
    assert ui.app_current()["package"] != DIALER  # back where the call was placed from
    d.shell(f"monkey -p {DIALER} -c android.intent.category.LAUNCHER 1")
    rows = ui(resourceId=f"{DIALER}:id/primary_text")
    assert rows[0].get_text() == "Grace Hopper" and rows.count < 16
    assert ui(resourceId=f"{DIALER}:id/new_call_log_recycler_view").info["scrollable"]
    ui(description="key pad").click()
    assert ui(resourceId=f"{DIALER}:id/dialpad_view").exists
    ui.press("back")
    assert not ui(resourceId=f"{DIALER}:id/dialpad_view").exists


GMAIL = "com.google.android.gm"
MAIL = "content://com.google.android.gm/messages"


def test_sendto_mailto_fills_the_composer_and_send_files_it_under_sent(virtual_phone):
    d = virtual_phone.device
    out = d.shell2("am start -a android.intent.action.SENDTO -d mailto:ada@example.com "
                   "--es android.intent.extra.SUBJECT 'Lab notes' --es android.intent.extra.TEXT 'Attached below.'")
    assert out.returncode == 0
    ui = u2.connect(d)
    # app_current reads `dumpsys activity top`, which names an activity in its app's package short
    assert ui.app_current()["activity"] == ".ComposeActivityGmail"
    assert ui(resourceId=f"{GMAIL}:id/to").get_text() == "ada@example.com"
    assert ui(resourceId=f"{GMAIL}:id/subject").get_text() == "Lab notes"
    ui(resourceId=f"{GMAIL}:id/body").set_text("Attached below. Thanks!")
    ui(description="Send").click()
    assert d.shell(f"content query --uri {MAIL} --projection folder:to_address:subject:body") == \
        "Row: 0 folder=sent, to_address=ada@example.com, subject=Lab notes, body=Attached below. Thanks!"


def test_inbox_lists_mail_opens_it_and_replies(virtual_phone):
    d = virtual_phone.device
    for i in range(10):
        d.shell(f"content insert --uri {MAIL} --bind from_address:s:news{i}@example.com --bind subject:s:'Issue {i}' "
                f"--bind date:l:{1700000000000 + i}")
    d.shell(f"content insert --uri {MAIL} --bind from_address:s:grace@example.com --bind subject:s:'Budget' "
            "--bind body:s:'Please approve by Friday' --bind date:l:1700000999000")
    d.shell(f"monkey -p {GMAIL} -c android.intent.category.LAUNCHER 1")
    ui = u2.connect(d)
    senders = ui(resourceId=f"{GMAIL}:id/senders")
    assert senders[0].get_text() == "grace@example.com" and senders.count < 11
    assert ui(resourceId=f"{GMAIL}:id/thread_list_view").info["scrollable"]
    ui(text="Budget").click()
    assert ui(resourceId=f"{GMAIL}:id/message_body").get_text() == "Please approve by Friday"
    ui(text="Reply").click()
    assert ui(resourceId=f"{GMAIL}:id/subject").get_text() == "Re: Budget"
    ui(resourceId=f"{GMAIL}:id/body").set_text("Approved.")
    ui(description="Send").click()
    assert d.shell(f"content query --uri {MAIL} --where \"folder='sent'\" --projection to_address:subject") == \
        "Row: 0 to_address=grace@example.com, subject=Re: Budget"
    ui.press("back")
    ui(text="Compose").click()
    assert ui(resourceId=f"{GMAIL}:id/to").info["text"] == "To"  # empty field shows its hint


CALENDAR = "com.google.android.calendar"
EVENTS = "content://com.android.calendar/events"
DEC_1_14H = 1796133600000  # 2026-12-01 14:00 UTC


def test_insert_event_intent_opens_the_editor_and_save_writes_the_event(virtual_phone):
    d = virtual_phone.device
    out = d.shell2("am start -a android.intent.action.INSERT -t vnd.android.cursor.dir/event --es title 'Design review' "
                   f"--el beginTime {DEC_1_14H} --el endTime {DEC_1_14H + 3600000} --es eventLocation 'Room 4B'")
    assert out.returncode == 0
    ui = u2.connect(d)
    assert ui.app_current()["activity"] == "com.android.calendar.event.EditEventActivity"
    assert ui(resourceId=f"{CALENDAR}:id/start_date_time").get_text() == "2026-12-01 14:00"
    assert d.shell(f"content query --uri {EVENTS}") == "No result found."  # nothing until Save
    ui(resourceId=f"{CALENDAR}:id/end_date_time").set_text("2026-12-01 15:30")
    ui(text="Save").click()
    assert d.shell(f"content query --uri {EVENTS} --projection title:dtstart:dtend:eventLocation") == \
        f"Row: 0 title=Design review, dtstart={DEC_1_14H}, dtend={DEC_1_14H + 5400000}, eventLocation=Room 4B"


def test_schedule_lists_events_by_start_and_the_editor_checks_times(virtual_phone):
    d = virtual_phone.device
    for i in range(12):
        d.shell(f"content insert --uri {EVENTS} --bind title:s:'Standup {i}' --bind dtstart:l:{DEC_1_14H + (12 - i) * 86400000}")
    d.shell(f"content insert --uri {EVENTS} --bind title:s:Dentist --bind dtstart:l:{DEC_1_14H} "
            f"--bind dtend:l:{DEC_1_14H + 1800000} --bind eventLocation:s:'Main St 5'")
    d.shell(f"monkey -p {CALENDAR} -c android.intent.category.LAUNCHER 1")
    ui = u2.connect(d)
    titles = ui(resourceId=f"{CALENDAR}:id/title")
    assert titles[0].get_text() == "Dentist" and titles.count < 13
    assert ui(resourceId=f"{CALENDAR}:id/timely_list").info["scrollable"]
    assert ui(resourceId=f"{CALENDAR}:id/time")[0].get_text() == "Tue, Dec 1 · 2:00 PM – 2:30 PM"
    ui(text="Dentist").click()
    assert ui(resourceId=f"{CALENDAR}:id/location").get_text() == "Main St 5"
    ui.press("back")
    ui(description="Create new event").click()
    ui(resourceId=f"{CALENDAR}:id/title").set_text("Gym")
    ui(resourceId=f"{CALENDAR}:id/start_date_time").set_text("tomorrow")
    ui(text="Save").click()
    assert ui(resourceId=f"{CALENDAR}:id/error").exists  # not saved
    assert "Gym" not in d.shell(f"content query --uri {EVENTS} --projection title")


def test_each_list_scrolls_to_its_oldest_row_and_back(virtual_phone):
    d = virtual_phone.device
    for i in range(15):
        _sms(d, f"+1555040{i:02d}", f"sms {i}")
        d.shell(f"content insert --uri {CALLS} --bind number:s:+1555050{i:02d} --bind date:l:{1700000000000 + i}")
        d.shell(f"content insert --uri {MAIL} --bind from_address:s:n{i}@example.com --bind subject:s:'Mail {i}' "
                f"--bind date:l:{1700000000000 + i}")
        d.shell(f"content insert --uri {EVENTS} --bind title:s:'Event {i}' --bind dtstart:l:{DEC_1_14H + i * 3600000}")
    ui = u2.connect(d)
    for package, rid, first, last in ((MESSAGES, "conversation_name", "+155504014", "+155504000"),
                                      (DIALER, "primary_text", "+155505014", "+155505000"),
                                      (GMAIL, "senders", "n14@example.com", "n0@example.com"),
                                      (CALENDAR, "title", "Event 0", "Event 14")):
        d.shell(f"monkey -p {package} -c android.intent.category.LAUNCHER 1")
        rows = ui(resourceId=f"{package}:id/{rid}")
        assert rows[0].get_text() == first and not ui(text=last).exists
        for _ in range(3):
            ui.swipe(540, 1900, 540, 500, 0.2)
        assert ui(text=last).exists and not ui(text=first).exists, package
        ui.swipe(540, 500, 540, 2000, 0.2)
        ui.swipe(540, 500, 540, 2000, 0.2)
        assert ui(resourceId=f"{package}:id/{rid}")[0].get_text() == first, package
        ui.press("home")
