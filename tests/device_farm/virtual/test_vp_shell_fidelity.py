"""The shell as standard clients see it, through the real adb server and adbutils: `sh -c`,
`content query` on content://settings backed by the `settings` store, and toybox's text
filters (head, tail, wc, sort, sed, cut, tr, uniq, printf), seq and yes in toybox's formats and
statuses, and `$((...))` arithmetic."""

from __future__ import annotations

from typing import Iterator

import pytest

from device_farm.virtual import VirtualPhone
from tests.conftest import PhoneHandle, attach_phone, detach_phone

NUMBERS = "printf '10\\n9\\n2\\n2\\n33\\n' > /sdcard/n"
TABLE = "printf 'ada:3:x\\nbob:1:y\\ncy:2:z\\n' > /sdcard/t"


@pytest.fixture(scope="module")
def phone(adb_server) -> Iterator[PhoneHandle]:
    """One phone for the read-only command table (each case sets up the files it reads)."""
    handle = attach_phone(adb_server, VirtualPhone())
    try:
        yield handle
    finally:
        detach_phone(handle)


def sh(handle: PhoneHandle, line: str) -> tuple[int, str, str]:
    result = handle.device.shell2(line, v2=True)
    return result.returncode, result.stdout, result.stderr


def test_sh_c_runs_through_adbutils_argv(virtual_phone):
    device = virtual_phone.device
    assert device.shell(["sh", "-c", "echo a; echo b"]) == "a\nb"
    assert device.shell(["/system/bin/sh", "-c", 'echo "$0:$1:$#"', "name", "one"]) == "name:one:1"
    assert sh(virtual_phone, "sh -c 'echo out; exit 7'") == (7, "out\n", "")
    assert sh(virtual_phone, "sh -c 'X=1'; echo ${X}none") == (0, "none\n", "")
    assert sh(virtual_phone, "echo 'echo from stdin' | sh") == (0, "from stdin\n", "")
    assert sh(virtual_phone, "echo 'echo one' > /sdcard/s.sh; sh /sdcard/s.sh") == (0, "one\n", "")
    assert sh(virtual_phone, "sh -c")[0] != 0


def test_content_query_settings_uses_the_settings_store(virtual_phone):
    device = virtual_phone.device
    device.shell("settings put system screen_brightness 128")
    rows = device.shell("content query --uri content://settings/system").splitlines()
    assert any(r.startswith("Row: ") and r.endswith(", name=screen_brightness, value=128") and " _id=" in r for r in rows)
    one = device.shell("content query --uri content://settings/system --where \"name='screen_brightness'\"")
    assert one.startswith("Row: 0 _id=") and one.endswith(", name=screen_brightness, value=128")
    assert device.shell("content query --uri content://settings/global --projection name:value "
                        "--where \"name='wifi_on'\"") == "Row: 0 name=wifi_on, value=1"
    assert device.shell("content query --uri content://settings/secure/android_id").endswith(
        "name=android_id, value=" + device.shell("settings get secure android_id"))
    assert device.shell("content query --uri content://settings/system --where \"name='nope'\"") == "No result found."
    device.shell("content insert --uri content://settings/global --bind name:s:stay_on_while_plugged_in --bind value:i:3")
    assert device.shell("settings get global stay_on_while_plugged_in") == "3"
    device.shell("content delete --uri content://settings/global --where \"name='stay_on_while_plugged_in'\"")
    assert device.shell("settings get global stay_on_while_plugged_in") == "null"
    status, _, err = sh(virtual_phone, "content query --uri content://settings/system --where 'value=1'")
    assert status == 1 and "java.lang.IllegalArgumentException: Supported SQL:" in err


def test_content_update_settings_as_the_settings_provider_does(virtual_phone):
    """SettingsProvider.update takes the setting from the selection but insists the values
    name one too, and only changes a setting that exists; `content update` prints nothing."""
    device = virtual_phone.device
    update = "content update --uri content://settings/global --where \"name='wifi_on'\""
    assert sh(virtual_phone, update + " --bind value:s:0") == (0, "", "")
    assert device.shell("settings get global wifi_on") == "1"
    assert sh(virtual_phone, update + " --bind name:s:wifi_on --bind value:s:0") == (0, "", "")
    assert device.shell("settings get global wifi_on") == "0"
    assert sh(virtual_phone, "content update --uri content://settings/global/wifi_on "
                             "--bind name:s:wifi_on --bind value:s:1") == (0, "", "")
    assert device.shell("settings get global wifi_on") == "1"
    assert sh(virtual_phone, "content update --uri content://settings/global --bind name:s:not_there "
                             "--bind value:s:1 --where \"name='not_there'\"") == (0, "", "")
    assert device.shell("settings get global not_there") == "null"
    assert device.shell("content query --uri content://settings/global --where \"name='not_there'\"") == "No result found."


@pytest.mark.parametrize("line, out, status", [
    (f"{NUMBERS}; head -n 2 /sdcard/n", "10\n9\n", 0),
    (f"{NUMBERS}; head -2 /sdcard/n", "10\n9\n", 0),
    (f"{NUMBERS}; head -c 4 /sdcard/n", "10\n9", 0),
    (f"{NUMBERS}; cat /sdcard/n | head -n 1", "10\n", 0),
    (f"{NUMBERS}; head -n 1 /sdcard/n /sdcard/n", "==> /sdcard/n <==\n10\n\n==> /sdcard/n <==\n10\n", 0),
    (f"{NUMBERS}; tail -n 2 /sdcard/n", "2\n33\n", 0),
    (f"{NUMBERS}; tail -n +4 /sdcard/n", "2\n33\n", 0),
    (f"{NUMBERS}; tail -c 3 /sdcard/n", "33\n", 0),
    ("head /nope", "", 1),
    (f"{NUMBERS}; wc -l /sdcard/n", "5 /sdcard/n\n", 0),
    (f"{NUMBERS}; wc -l < /sdcard/n", "5\n", 0),
    ("echo hello world | wc", "      1       2      12\n", 0),
    ("echo hello world | wc -w -c", "      2      12\n", 0),
    (f"{NUMBERS}; wc -c /sdcard/n /sdcard/n", "     12 /sdcard/n\n     12 /sdcard/n\n     24 total\n", 0),
    (f"{NUMBERS}; sort /sdcard/n", "10\n2\n2\n33\n9\n", 0),
    (f"{NUMBERS}; sort -n /sdcard/n", "2\n2\n9\n10\n33\n", 0),
    (f"{NUMBERS}; sort -rn /sdcard/n", "33\n10\n9\n2\n2\n", 0),
    (f"{NUMBERS}; sort -nu /sdcard/n", "2\n9\n10\n33\n", 0),
    (f"{TABLE}; sort -t : -k 2 -n /sdcard/t", "bob:1:y\ncy:2:z\nada:3:x\n", 0),
    (f"{TABLE}; sort -t: -k3,3r /sdcard/t", "cy:2:z\nbob:1:y\nada:3:x\n", 0),
    ("echo 'b a' | sort -k 0", "", 2),
    ("echo hello | sed 's/l/L/'", "heLlo\n", 0),
    ("echo hello | sed 's/l/L/g'", "heLLo\n", 0),
    ("echo /a/b | sed 's|/|_|g'", "_a_b\n", 0),
    ("echo abc | sed 's/\\(b\\)/[\\1]/'", "a[b]c\n", 0),
    ("echo abc | sed -E 's/(b)(c)/\\2\\1/'", "acb\n", 0),
    ("echo abc | sed 's/b/<&>/'", "a<b>c\n", 0),
    (f"{NUMBERS}; sed -n 2p /sdcard/n", "9\n", 0),
    (f"{NUMBERS}; sed 2d /sdcard/n | head -n 2", "10\n2\n", 0),
    (f"{NUMBERS}; sed -n '/^2$/p' /sdcard/n", "2\n2\n", 0),
    (f"{NUMBERS}; sed -e 1d -e 's/2/two/' /sdcard/n", "9\ntwo\ntwo\n33\n", 0),
    (f"{NUMBERS}; sed '2,4d;$s/3/x/g' /sdcard/n", "10\nxx\n", 0),
    (f"{NUMBERS}; sed -n '$p' /sdcard/n", "33\n", 0),
    (f"{NUMBERS}; sed 3q /sdcard/n", "10\n9\n2\n", 0),
    ("echo hi > /sdcard/i; sed -i 's/hi/ho/' /sdcard/i; cat /sdcard/i", "ho\n", 0),
    ("echo abc | sed 'k'", "", 1),
    (f"{TABLE}; cut -d : -f 1 /sdcard/t", "ada\nbob\ncy\n", 0),
    (f"{TABLE}; cut -d: -f2- /sdcard/t | head -n 1", "3:x\n", 0),
    ("echo hello | cut -c 2-4", "ell\n", 0),
    ("echo hello | tr a-z A-Z", "HELLO\n", 0),
    ("echo hello | tr -d l", "heo\n", 0),
    ("echo 'a  b   c' | tr -s ' '", "a b c\n", 0),
    ("echo 'a:b' | tr ':' '\\n'", "a\nb\n", 0),
    (f"{NUMBERS}; sort -n /sdcard/n | uniq", "2\n9\n10\n33\n", 0),
    (f"{NUMBERS}; sort -n /sdcard/n | uniq -c | head -n 1", "      2 2\n", 0),
    (f"{NUMBERS}; sort /sdcard/n | uniq -d", "2\n", 0),
    ("printf '%s=%d\\n' a 1 b 2", "a=1\nb=2\n", 0),
    ("echo hello | sed 'y/lo/LO/'", "heLLO\n", 0),
    ("echo a/b | sed 'y,/,|,'", "a|b\n", 0),
    ("printf 'ab\\ncd\\n' | sed -n '2y/dc/DC/;2p'", "CD\n", 0),
    ("echo abc | sed 'y/ab/x/'", "", 1),
    ("seq 3", "1\n2\n3\n", 0),
    ("seq 2 4", "2\n3\n4\n", 0),
    ("seq 1 3 8", "1\n4\n7\n", 0),
    ("seq 5 -2 1", "5\n3\n1\n", 0),
    ("seq 3 1", "", 0),
    ("seq 1 0 3", "", 0),
    ("seq -s , 3", "1,2,3\n", 0),
    ("seq -w 8 10", "08\n09\n10\n", 0),
    ("seq 1 0.5 2", "1.0\n1.5\n2.0\n", 0),
    ("seq -f %03g 2", "001\n002\n", 0),
    ("seq 3 | tail -n 1", "3\n", 0),
    ("seq x", "", 1),
    ("seq", "", 1),
    ("seq 1 2 3 4", "", 1),
    ("yes | head -n 3", "y\ny\ny\n", 0),
    ("yes ab cd | head -n 2", "ab cd\nab cd\n", 0),
    ("sh -c yes | head -n 1", "y\n", 0),
    ("x=4; echo $((x+1)) $(( $x * 2 )) $((7/2)) $((7%3)) $((-3+(2*5))) $((x>3)) $((1==2))", "5 8 3 1 7 1 0\n", 0),
    ("echo $((0x10 + 010)) $((y + 1)) $((-7/2))", "24 1 -3\n", 0),
    ("sh -c 'n=2; echo \"$((n*n))\"'", "4\n", 0),
    ("echo '$((1+1))'", "$((1+1))\n", 0),
    ("echo $((1+))", "", 1),
    ("z=0; echo $((1/z)); echo after", "", 1),
    ("getprop | grep sdk | cut -d ' ' -f 2 | tr -d '[]'", "34\n", 0),
    ("pm list packages | sort | head -n 1 | wc -l", "1\n", 0),
])
def test_toybox_text_filters(phone, line, out, status):
    got_status, got_out, _ = sh(phone, line)
    assert (got_out, got_status) == (out, status)
