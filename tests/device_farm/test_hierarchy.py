"""Hierarchy XML → compact elements: what the planner reads of a screen."""

from device_farm.hierarchy import parse_hierarchy

XML = """<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>
<hierarchy rotation="0">
<node index="0" text="" resource-id="" class="android.widget.FrameLayout" package="com.google.android.deskclock" content-desc="" checkable="false" checked="false" clickable="false" enabled="true" focusable="false" focused="false" scrollable="false" long-clickable="false" password="false" selected="false" bounds="[0,0][1080,2400]">
  <node index="0" text="7:30 AM" resource-id="com.google.android.deskclock:id/digital_clock" class="android.widget.TextView" package="com.google.android.deskclock" content-desc="" checkable="false" checked="false" clickable="false" enabled="true" focusable="false" focused="false" scrollable="false" long-clickable="false" password="false" selected="false" bounds="[40,300][600,420]" />
  <node index="1" text="" resource-id="com.google.android.deskclock:id/onoff" class="android.widget.Switch" package="com.google.android.deskclock" content-desc="" checkable="true" checked="true" clickable="true" enabled="true" focusable="true" focused="false" scrollable="false" long-clickable="false" password="false" selected="false" bounds="[900,320][1040,400]" />
  <node index="2" text="" resource-id="" class="android.widget.LinearLayout" package="com.google.android.deskclock" content-desc="" checkable="false" checked="false" clickable="false" enabled="true" focusable="false" focused="false" scrollable="false" long-clickable="false" password="false" selected="false" bounds="[0,500][1080,600]" />
  <node index="3" text="" resource-id="com.google.android.deskclock:id/fab" class="android.widget.ImageButton" package="com.google.android.deskclock" content-desc="Add alarm" checkable="false" checked="false" clickable="true" enabled="true" focusable="true" focused="false" scrollable="false" long-clickable="false" password="false" selected="false" bounds="[480,2100][600,2220]" />
  <node index="4" text="Name" resource-id="n" class="android.widget.EditText" package="com.google.android.deskclock" content-desc="" checkable="false" checked="false" clickable="true" enabled="true" focusable="true" focused="true" scrollable="false" long-clickable="false" password="false" selected="false" bounds="[0,0][0,0]" />
</node>
</hierarchy>"""


def test_keeps_only_readable_or_actionable_elements():
    screen = parse_hierarchy(XML)
    assert screen.package == "com.google.android.deskclock"
    assert [e.role for e in screen.elements] == ["TextView", "Switch", "ImageButton"]
    switch = screen.element(1)
    assert switch.checked and switch.actions == ("tap",) and switch.bounds.center == (970, 360)


def test_text_form_names_ids_labels_and_state():
    lines = parse_hierarchy(XML).to_text().splitlines()
    assert lines[0] == "app: com.google.android.deskclock"
    assert lines[1] == '[0] TextView "7:30 AM" id=digital_clock'
    assert lines[2] == "[1] Switch id=onoff checked tap"
    assert lines[3] == '[2] ImageButton "Add alarm" id=fab tap'


def test_text_form_respects_budget():
    text = parse_hierarchy(XML).to_text(max_chars=60)
    assert len(text) < 100 and "more elements not shown" in text


def test_ids_and_digest_are_stable_and_change_with_the_screen():
    a, b = parse_hierarchy(XML), parse_hierarchy(XML)
    assert a.digest == b.digest and a.elements == b.elements
    c = parse_hierarchy(XML.replace('checked="true"', 'checked="false"'))
    assert c.digest != a.digest


def test_diff_names_what_appeared_went_and_changed():
    from device_farm.hierarchy import diff_screens

    before = parse_hierarchy(XML)
    after = parse_hierarchy(XML.replace('checked="true"', 'checked="false"').replace('content-desc="Add alarm"', 'content-desc="New alarm"'))
    assert diff_screens(before, before) == []
    lines = diff_screens(before, after)
    assert "~ [1] Switch id=onoff tap (was: Switch id=onoff checked tap)" in lines
    assert '~ [2] ImageButton "New alarm" id=fab tap (was: ImageButton "Add alarm" id=fab tap)' in lines
    gone = parse_hierarchy(XML.replace("7:30 AM", ""))
    assert diff_screens(before, gone)[-1].startswith('- [0] TextView "7:30 AM"')
    other = parse_hierarchy(XML.replace("com.google.android.deskclock", "com.other"))
    assert diff_screens(before, other) == ["app changed: com.google.android.deskclock → com.other"]


def test_the_topmost_large_window_names_the_package():
    def node(pkg, bounds, children=""):
        return f'<node text="x" class="android.widget.FrameLayout" package="{pkg}" bounds="{bounds}">{children}</node>'

    app = node("com.app", "[0,0][1080,2400]", node("com.app", "[0,0][1080,1200]") * 3)
    status_bar = node("com.android.systemui", "[0,0][1080,132]")
    keyboard = node("com.google.android.inputmethod.latin", "[0,1500][1080,2400]")
    shade = node("com.android.systemui", "[0,0][1080,2337]")
    assert parse_hierarchy(f"<hierarchy>{app}{status_bar}{keyboard}</hierarchy>").package == "com.app"
    assert parse_hierarchy(f"<hierarchy>{app}{shade}</hierarchy>").package == "com.android.systemui"
