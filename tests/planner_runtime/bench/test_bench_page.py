"""The ``--html`` report opened in headless Chromium (selenium): the rendered table's cells, one
bar per planner and scored category, whiskers for the intervals, and nothing fetched."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

FINISH = {"name": "finish", "arguments": {"answer": "ok"}}
SCRIPTS_A = {"clock.set_alarm": [{"name": "set_alarm", "arguments": {"hour": 7, "minutes": 30}}, FINISH],
             "contacts.lookup_number": [{"name": "skill_contacts_lookup", "arguments": {"name": "Grace Hopper"}},
                                        {"name": "finish", "arguments": {"answer": "+1 555 0199"}}]}
SCRIPTS_B = {"contacts.add_contact": [{"name": "add_contact", "arguments": {"name": "Ada Lovelace", "phone": "+1 555 0100"}}, FINISH]}
TASKS = ["clock.set_alarm", "contacts.add_contact", "contacts.lookup_number"]  # tool, tool, skills: no memory nor sub-agent task


@pytest.fixture(scope="module")
def browser():
    webdriver = pytest.importorskip("selenium.webdriver")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    driver = shutil.which("chromedriver")
    if chromium is None or driver is None:
        if os.environ.get("CI") == "true":
            pytest.fail("chromium or chromedriver is missing in CI (.ci/run installs them)")
        pytest.skip("chromium and chromedriver are not installed (apt-get install -y chromium chromium-driver)")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking"):
        options.add_argument(flag)
    browser = webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=driver))
    try:
        yield browser
    finally:
        browser.quit()


def test_the_page_draws_a_bar_per_planner_and_scored_category_and_the_table_cells(tmp_path, browser):
    from selenium.webdriver.common.by import By

    a, b, page = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "report.html"
    a.write_text(json.dumps(SCRIPTS_A))
    b.write_text(json.dumps(SCRIPTS_B))
    res = subprocess.run(
        [sys.executable, "-m", "planner_runtime.cli.main", "bench", "--planner", "scripted", "--script", str(a), "--planner", "scripted",
         "--script", str(b), *(w for t in TASKS for w in ("--task", t)), "--store", str(tmp_path / "t.sqlite"),
         "--state-dir", str(tmp_path / "pool"), "-n", "2", "--html", str(page), "--json"],
        capture_output=True, text=True, timeout=240)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["planners"]["scripted:a"]["categories"]["overall"]["successes"] == 2

    browser.get(page.resolve().as_uri())
    bars = browser.find_elements(By.CSS_SELECTOR, "svg#categories rect.bar")
    # overall, tool and skills were scored for both planners; memory and sub-agent had no task: no bar
    assert sorted((bar.get_attribute("data-group"), bar.get_attribute("data-planner")) for bar in bars) == sorted(
        (g, p) for g in ("overall", "tool", "skills") for p in ("scripted:a", "scripted:b"))
    assert len(browser.find_elements(By.CSS_SELECTOR, "svg#categories line.whisker")) == 6
    fills = {bar.get_attribute("data-planner"): bar.get_attribute("fill") for bar in bars}
    assert len(set(fills.values())) == 2  # one colour per planner
    heights = {(bar.get_attribute("data-group"), bar.get_attribute("data-planner")): float(bar.get_attribute("height")) for bar in bars}
    assert heights[("tool", "scripted:a")] == pytest.approx(heights[("tool", "scripted:b")])  # 1/2 each
    assert heights[("skills", "scripted:b")] == 0 < heights[("skills", "scripted:a")]  # 0/1 against 1/1

    rows = {row.find_element(By.TAG_NAME, "td").text: [td.text for td in row.find_elements(By.TAG_NAME, "td")[1:]]
            for row in browser.find_elements(By.CSS_SELECTOR, "table#figures tbody tr")}
    assert rows["Overall"][0] == "67% [21–94%] 2/3" and rows["Overall"][5] == "33% [6–79%] 1/3"
    assert rows["Skills"][0] == "100% [21–100%] 1/1" and rows["Memory"][0] == "–"
    assert {"domain clock", "domain contacts", "difficulty easy"} <= set(rows)
    assert "never scored" in browser.find_element(By.ID, "infra").text
    assert "<script" not in page.read_text() and "http" not in page.read_text().replace('xmlns="http://www.w3.org/2000/svg"', "")
