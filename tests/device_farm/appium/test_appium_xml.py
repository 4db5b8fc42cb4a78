"""Page sources of other drivers read as uiautomator dumps; selectors become Appium locators."""

from __future__ import annotations

import pytest

from device_farm.appium.device import locator_for
from device_farm.appium.xml import to_uiautomator_xml
from device_farm.errors import UiRpcError
from device_farm.hierarchy import parse_hierarchy
from device_farm.adb.u2rpc import ui_selector

XCUITEST_SOURCE = """<?xml version="1.0" encoding="UTF-8"?>
<AppiumAUT>
  <XCUIElementTypeApplication type="XCUIElementTypeApplication" name="Settings" label="Settings" enabled="true" visible="true" x="0" y="0" width="390" height="844">
    <XCUIElementTypeNavigationBar type="XCUIElementTypeNavigationBar" name="Wi-Fi" enabled="true" visible="true" x="0" y="47" width="390" height="44">
      <XCUIElementTypeButton type="XCUIElementTypeButton" name="Back" label="Settings" enabled="true" visible="true" x="0" y="47" width="100" height="44"/>
    </XCUIElementTypeNavigationBar>
    <XCUIElementTypeSwitch type="XCUIElementTypeSwitch" name="wifi" label="Wi-Fi" value="1" enabled="true" visible="true" x="310" y="120" width="51" height="31"/>
    <XCUIElementTypeTextField type="XCUIElementTypeTextField" name="search" value="" enabled="true" visible="true" x="16" y="200" width="358" height="36"/>
    <XCUIElementTypeStaticText type="XCUIElementTypeStaticText" name="hint" label="Offscreen" enabled="false" visible="false" x="0" y="900" width="10" height="10"/>
  </XCUIElementTypeApplication>
</AppiumAUT>"""

UIAUTOMATOR_SOURCE = (
    '<?xml version="1.0" encoding="UTF-8"?><hierarchy rotation="0"><node index="0" text="OK" '
    'resource-id="android:id/button1" class="android.widget.Button" package="com.android.settings" '
    'clickable="true" enabled="true" bounds="[0,0][100,50]" /></hierarchy>'
)


def test_xcuitest_source_becomes_elements_with_roles_and_actions() -> None:
    screen = parse_hierarchy(to_uiautomator_xml(XCUITEST_SOURCE))
    by_desc = {e.description: e for e in screen.elements}
    back, wifi, search = by_desc["Back"], by_desc["wifi"], by_desc["search"]
    assert (back.role, back.text, back.actions) == ("XCUIElementTypeButton", "Settings", ("tap",))
    assert back.bounds.center == (50, 69)
    assert wifi.checkable and wifi.checked and wifi.text == "Wi-Fi"
    assert search.editable and "type" in search.actions
    assert "hint" not in by_desc  # not visible


def test_a_uiautomator_dump_passes_through_unchanged() -> None:
    assert to_uiautomator_xml(UIAUTOMATOR_SOURCE) == UIAUTOMATOR_SOURCE
    (ok,) = parse_hierarchy(to_uiautomator_xml(UIAUTOMATOR_SOURCE)).elements
    assert ok.resource_id == "android:id/button1"


def test_elements_without_geometry_are_kept_in_the_tree_but_not_shown() -> None:
    xml = to_uiautomator_xml('<app><MockButton id="b" text="Go"/></app>')
    assert 'resource-id="b"' in xml and "bounds=" not in xml
    assert parse_hierarchy(xml).elements == ()


def test_uiautomator2_gets_an_exact_uiselector_with_escaping() -> None:
    strategy, value, index = locator_for(ui_selector(text='say "hi" \\ bye', className="android.widget.Button", instance=2),
                                         "UiAutomator2")
    assert strategy == "-android uiautomator" and index == 0
    assert value == 'new UiSelector().text("say \\"hi\\" \\\\ bye").className("android.widget.Button").instance(2)'


def test_other_drivers_get_plain_strategies_or_xpath() -> None:
    assert locator_for(ui_selector(resourceId="save"), "XCUITest") == ("id", "save", 0)
    assert locator_for(ui_selector(description="Back", instance=1), "XCUITest") == ("accessibility id", "Back", 1)
    strategy, value, _ = locator_for(ui_selector(text="it's"), "XCUITest")
    assert strategy == "xpath" and '"it\'s"' in value


def test_a_selector_with_no_usable_field_is_refused() -> None:
    with pytest.raises(UiRpcError):
        locator_for(ui_selector(checked=True), "Fake")
