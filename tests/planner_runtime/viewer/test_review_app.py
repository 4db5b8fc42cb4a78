"""The review app over real HTTP (uvicorn on a loopback port): the queue and item pages escape what
episodes recorded, opening an item leases it, and every malformed or forbidden request is refused
with its status and a message, nothing decided."""

from __future__ import annotations

import html
import json

import httpx
import pytest
from typer.testing import CliRunner

from planner_runtime.cli.main import app
from planner_runtime.data.review import queue
from planner_runtime.errors import ConfigError
from planner_runtime.trajectories.artifacts import ArtifactStore
from planner_runtime.trajectories.store import TrajectoryStore
from planner_runtime.viewer.review.server import ReviewServer

PLANTED = "<script>document.title='pwned'</script><img src=x onerror=\"document.title='pwned'\">"  # as conftest plants it

PNG = (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89\x00\x00\x00"
       b"\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00\x00\x00\x00IEND\xaeB`\x82")


@pytest.fixture
def running(review_store, serve, tmp_path):
    ref = ArtifactStore(tmp_path / "artifacts").put(PNG, "png")
    path = review_store(3, screenshot=ref)
    server = serve(path)
    with httpx.Client(base_url=server.url, timeout=10) as client:
        yield path, client


def as_reviewer(client: httpx.Client, who: str, path: str) -> httpx.Response:
    client.cookies.set("reviewer", who)
    return client.get(path)


def _items(path):
    with TrajectoryStore(path, create=False) as store:
        return queue.items(store), queue.decisions(store)


def test_pages_escape_recorded_text_and_opening_an_item_leases_it(running):
    path, client = running
    home = client.get("/")
    assert home.status_code == 200 and home.text.count('class="item open"') == 3
    assert PLANTED not in home.text and "&lt;script&gt;" in home.text  # the flag's detail quotes the hint, escaped
    assert home.headers["content-security-policy"].startswith("default-src 'none'; script-src 'self'")
    items, _ = _items(path)
    first = items[0]
    page = as_reviewer(client, "alice", f"/items/{first.id}")
    assert page.status_code == 200
    assert PLANTED not in page.text and "<script>document" not in page.text
    assert "Pay the bill &lt;script&gt;" in page.text and "I will pay &lt;script&gt;" in page.text
    assert "data:image/png;base64," in page.text  # the stored screenshot, inline
    assert "balance &lt;script&gt;" in page.text  # the verdict's evidence
    assert 'id="legend"' in page.text and "<kbd>a</kbd> approve" in page.text
    assert _items(path)[0][0].leased_to() == "alice"
    held = as_reviewer(client, "bob", f"/items/{first.id}")
    assert held.status_code == 200 and "leased by alice" in held.text
    assert client.get("/review.js").headers["content-type"].startswith("text/javascript")


def test_a_form_decision_goes_on_to_the_next_item_and_json_answers_json(running):
    path, client = running
    items, _ = _items(path)
    as_reviewer(client, "alice", f"/items/{items[0].id}")
    posted = client.post(f"/items/{items[0].id}/decide", data={"reviewer": "alice", "decision": "approve", "note": "ok"})
    assert posted.status_code == 303 and posted.headers["location"] == "/next"
    assert posted.cookies.get("reviewer") == "alice"
    nxt = as_reviewer(client, "alice", "/next")
    assert nxt.status_code == 303 and nxt.headers["location"] == f"/items/{items[1].id}"
    good = items[2]
    against = "failure" if int(good.trajectory_id[1:]) % 3 else "success"  # the opposite of the verifier's verdict
    answer = client.post(f"/items/{good.id}/decide", json={"reviewer": "bob", "decision": "relabel", "label": against})
    assert answer.status_code == 200 and answer.json()["resolved"] is False and answer.json()["item"]["required_reviews"] == 2
    after, made = _items(path)
    assert [(d.item_id, d.reviewer, d.decision, d.note) for d in made] == [(items[0].id, "alice", "approve", "ok"),
                                                                           (good.id, "bob", "relabel", "")]
    assert client.get(f"/api/items/{good.id}").json()["decisions"][0]["label_success"] is (against == "success")
    assert client.get("/api/items", params={"status": "resolved"}).json()[0]["id"] == items[0].id


@pytest.mark.parametrize("body, status, message", [
    ({"decision": "approve"}, 400, "missing field 'reviewer'"),
    ({"reviewer": "carol"}, 400, "missing field 'decision'"),
    ({"reviewer": "carol", "decision": "maybe"}, 400, "must be approve, reject or relabel, not 'maybe'"),
    ({"reviewer": "carol", "decision": "relabel"}, 400, "relabel needs field 'label'"),
    ({"reviewer": "carol", "decision": "relabel", "label": "yes"}, 400, "relabel needs field 'label'"),
    ({"reviewer": "carol", "decision": "approve", "admin": "1"}, 400, "unknown field 'admin'"),
    ({"reviewer": "x" * 200, "decision": "approve"}, 400, "at most 80 printable characters"),
    ({"reviewer": "bob", "decision": "approve"}, 409, "leased by alice"),
])
def test_bad_or_forbidden_decisions_are_refused_with_a_message(running, body, status, message):
    path, client = running
    item = _items(path)[0][0].id
    as_reviewer(client, "alice", f"/items/{item}")
    as_form = client.post(f"/items/{item}/decide", data=body)
    as_json = client.post(f"/items/{item}/decide", json=body)
    assert (as_form.status_code, as_json.status_code) == (status, status)
    assert message in html.unescape(as_form.text) and message in as_json.json()["error"]
    assert _items(path)[1] == []


def test_unreadable_requests_unknown_items_and_filters(running):
    path, client = running
    item = _items(path)[0][0].id
    assert client.post("/items/rev_nope/decide", data={"reviewer": "a", "decision": "approve"}).status_code == 404
    assert client.get("/items/rev_nope").status_code == 404
    twice = client.post(f"/items/{item}/decide", content="reviewer=a&decision=approve&decision=reject",
                        headers={"content-type": "application/x-www-form-urlencoded"})
    assert twice.status_code == 400 and "given more than once" in html.unescape(twice.text)
    wrong = client.post(f"/items/{item}/decide", content="hello", headers={"content-type": "text/plain"})
    assert wrong.status_code == 400 and "x-www-form-urlencoded or application/json" in wrong.text
    big = client.post(f"/items/{item}/decide", data={"reviewer": "a", "decision": "approve", "note": "n" * 70_000})
    assert big.status_code == 400 and "at most 65536 bytes" in big.text
    not_object = client.post(f"/items/{item}/decide", json=["approve"])
    assert not_object.status_code == 400 and "JSON object" in not_object.json()["error"]
    assert client.get("/", params={"reason": "boredom"}).status_code == 400
    client.cookies.clear()
    nameless = client.get("/next")
    assert nameless.status_code == 400 and "type your name" in nameless.text
    assert _items(path)[1] == []


def test_a_non_loopback_address_is_refused_unless_allowed(review_store, tmp_path):
    path = review_store(1)
    with pytest.raises(ConfigError, match="not a loopback address.*--allow-remote"):
        ReviewServer(path, host="0.0.0.0").start()
    res = CliRunner().invoke(app, ["review", "serve", "--store", str(path), "--host", "192.0.2.1"])
    assert res.exit_code == 2 and "--allow-remote" in res.stderr
    missing = CliRunner().invoke(app, ["review", "serve", "--store", str(tmp_path / "none.sqlite")])
    assert missing.exit_code == 2 and "no trajectory store at" in missing.stderr
    assert json.loads(CliRunner().invoke(app, ["review", "list", "--store", str(path), "--json"]).stdout)[0]["status"] == "open"
