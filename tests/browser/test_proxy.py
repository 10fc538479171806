"""The deployment of docs/deployment.md §4, for real: Debian's nginx with deploy/nginx.conf in front
of two app processes, all on 127.0.0.1, and headless Chromium going through it as students would.

- the guide's nginx block is deploy/nginx.conf, and nginx accepts it as written;
- through the proxy a page loads, a typed sentence runs, charts are drawn, no error shows; XSRF
  protection and the origin check are on;
- Streamlit's frontend comes from nginx, compressed, never from the app processes;
- stickiness: each browser's runs all land on one process, also after its connection dropped, and
  browsers spread over both processes;
- a lost process: the sessions it held come back on the other one within 10 s, on the same page,
  sentence, direction, layer and head, with no error and no reload; the others notice nothing;
  restarted, it takes sessions again, and the moved ones stay where their sessions now live.

Skipped, saying why, where nginx, openssl or Chromium is missing (.ci/run installs them). The
fixtures start every process and stop it again, whatever happens.
"""

from __future__ import annotations

import gzip
import http.client
import json
import os
import re
import shutil
import signal
import ssl
import time
import urllib.parse
from pathlib import Path

import pytest
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from tests.support import proxy
from tests.support.browser import (CHROMIUM, CHROMIUM_ARGS, COUNT_RUNS_JS, PAGE_ERRORS_JS, ROOT,
                                   RUN_DONE_JS, app_pages, default_page)

# Generous bounds for a busy 2-core machine, but for the two below.
WAIT_MS = int(float(os.environ.get("BROWSER_TEST_TIMEOUT_S", "120")) * 1000)
SERVER_START_S = 120
# The target for a session whose process died: running again on another process within 10 s.
# Measured on a 2-core machine with two training runs on it: 1.2-1.3 s to the charts drawn (load
# average ~4); with other test suites running too (load average 4-8) 6.7-8.2 s (the reruns had
# started after 2.3-4.5 s) and 7.7-11.2 s, mostly six browsers and two servers building and drawing
# figures on the same two cores. So the page fully back and drawn is held to three times the target,
# a margin for such a machine; on a student's own computer the drawing takes about a second
# (docs/deployment.md §2).
RECONNECT_LIMIT_S = 10
REDRAWN_LIMIT_S = 3 * RECONNECT_LIMIT_S

TITLES = {p["url_path"]: p["title"] for p in app_pages()}
DEFAULT_PAGE = default_page()["url_path"]  # served at the root URL only
# Six students, each on a page of its own with its own sentence, direction, layer and head.
# Consecutive first visits alternate between the processes, so each process gets both directions.
STUDENTS = [
    ("overview", "tiny-de-en", "ein mann spielt im park .", 0, 0),
    ("tokens", "tiny-de-en", "zwei kinder sitzen am strand .", 1, 1),
    ("attention", "tiny-en-de", "a dog runs on the street .", 1, 3),
    ("encoder", "tiny-en-de", "two children sit at the beach .", 0, 2),
    ("decoder", "tiny-de-en", "eine frau läuft auf der straße .", 1, 2),
    ("masking", "tiny-en-de", "a woman plays with a red ball .", 0, 3),
]


def missing_tools() -> str | None:
    if proxy.nginx_binary() is None:
        return "nginx is missing (apt-get install nginx-light)"
    if shutil.which("openssl") is None:
        return "openssl is missing (apt-get install openssl)"
    return None


needs_nginx = pytest.mark.skipif(missing_tools() is not None, reason=str(missing_tools()))


def browser_test(test):
    """A test through nginx in Chromium: skipped, saying why, without either."""
    for mark in [needs_nginx, pytest.mark.browser,
                 pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                    reason=f"{CHROMIUM} is missing (apt-get install chromium)")]:
        test = mark(test)
    return test


def test_the_guide_shows_deploy_nginx_conf():
    """docs/deployment.md shows the configuration the tests run, character for character."""
    guide = (ROOT / "docs" / "deployment.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```nginx\n(.*?)^```$", guide, re.M | re.S)
    assert len(blocks) == 1, "docs/deployment.md should hold exactly one nginx block"
    assert blocks[0] == proxy.NGINX_CONF.read_text(encoding="utf-8"), \
        ("the nginx block of docs/deployment.md differs from deploy/nginx.conf: copy the file into "
         "the guide")


@needs_nginx
def test_nginx_accepts_deploy_nginx_conf(tmp_path):
    """`nginx -t` on the file as written (ports, TLS and HTTP/2 included); only the certificate is a
    test one."""
    cert, key = proxy.self_signed_certificate(tmp_path)
    site = tmp_path / "transformer-viz.conf"
    site.write_text(proxy.site_config(cert, key), encoding="utf-8")
    conf = tmp_path / "nginx.conf"
    conf.write_text(proxy.main_config(tmp_path, site), encoding="utf-8")
    result = proxy.check_config(conf)
    assert result.returncode == 0, result.stderr + (tmp_path / "error.log").read_text()


# --- the deployment, and students in a browser ----------------------------------------------------

def two_directions(checkpoint: Path, root: Path) -> Path:
    """The tiny test checkpoint twice, once labelled German→English and once English→German."""
    for name, src, tgt in [("tiny-de-en", "de", "en"), ("tiny-en-de", "en", "de")]:
        shutil.copytree(checkpoint, root / name)
        meta_path = root / name / "metadata.json"
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        meta_path.write_text(json.dumps({**meta, "src_lang": src, "tgt_lang": tgt}),
                             encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def deployment(checkpoint_dir, tmp_path_factory):
    root = tmp_path_factory.mktemp("proxy")
    checkpoints = two_directions(checkpoint_dir, root / "checkpoints")
    with proxy.cluster(root, checkpoints, timeout_s=SERVER_START_S) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api",
                                   reason="the playwright package is not installed")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                              args=CHROMIUM_ARGS + proxy.CHROMIUM_PROXY_ARGS)
        try:
            yield b
        finally:
            b.close()


class Student:
    """One browser with cookies of its own (a playwright context), using the app through the proxy.

    Counts its websockets, and reads the server's messages on them: every script run starts with a
    new_session message that names the Streamlit session, and ends with script_finished. The run log
    names the process of each session."""

    def __init__(self, browser, url: str, cookie: str | None = None):
        self.url = url
        self.context = browser.new_context(viewport={"width": 1280, "height": 900})
        if cookie is not None:
            self.context.add_cookies([{"name": proxy.STICKY_COOKIE, "value": cookie, "url": url}])
        self.context.add_init_script(COUNT_RUNS_JS)
        self.page = self.context.new_page()
        self.page.set_default_timeout(WAIT_MS)
        self.sockets, self.finished, self.sessions, self.dialogs = 0, 0, [], []
        # session id -> time.monotonic() of its first run's start
        self.started: dict[str, float] = {}
        self.page.on("websocket", self._on_websocket)
        self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))

    def _on_websocket(self, ws) -> None:
        self.sockets += 1
        ws.on("framereceived", self._on_frame)

    def _on_frame(self, payload) -> None:
        if not isinstance(payload, bytes):
            return
        msg = ForwardMsg.FromString(payload)
        kind = msg.WhichOneof("type")
        if kind == "new_session" and msg.new_session.initialize.session_id not in self.sessions:
            self.sessions.append(msg.new_session.initialize.session_id)
            self.started[self.sessions[-1]] = time.monotonic()
        elif kind == "script_finished":
            self.finished += 1

    def open(self, url_path: str, **query) -> None:
        path = "" if url_path == DEFAULT_PAGE else url_path
        self.page.goto(f"{self.url}/{path}?{urllib.parse.urlencode(query)}")
        self.wait(0, title=TITLES[url_path])

    def wait(self, after: int, **expect: str) -> None:
        """Until the run after an action is over and every chart drawn (bench/README: how a wait
        ends)."""
        self.page.wait_for_function(RUN_DONE_JS, arg={"after": after, **expect}, polling=100,
                                    timeout=WAIT_MS)

    def commit(self, sentence: str) -> None:
        area = self.page.get_by_label(re.compile(r"^Sentence"))
        area.fill(sentence)
        before = self.page.evaluate("window.__stRuns")
        area.press("Control+Enter")
        self.wait(before, sentence=sentence)

    def back_after(self, finished: int) -> bool:
        """Whether a run that started after `finished` runs is over and drawn."""
        return self.finished > finished and self.page.evaluate(RUN_DONE_JS, 0)

    def state(self) -> dict:
        """What the student sees: the URL, the page's title, the sentence, and the sidebar's choices
        (example, direction, layer, head)."""
        return {"url": self.page.url,
                "title": self.page.locator('[data-testid="stMain"] h1').first.inner_text(),
                "sentence": self.page.get_by_label(re.compile(r"^Sentence")).input_value(),
                "sidebar": self.page.locator('[data-testid="stSidebar"] '
                                             '[data-testid="stSelectbox"]').all_inner_texts()}

    def problems(self) -> list[str]:
        """Exceptions and error boxes on the page, dialogs, and a connection that is not up."""
        connection = self.page.locator('[data-testid="stApp"]').get_attribute(
            "data-test-connection-state")
        return (self.page.evaluate(PAGE_ERRORS_JS) + self.dialogs
                + self.page.locator('[role="dialog"]').all_inner_texts()
                + ([] if connection == "CONNECTED" else [f"connection {connection}"]))

    def cookies(self) -> dict[str, dict]:
        return {c["name"]: c for c in self.context.cookies()}

    def close(self) -> None:
        self.context.close()


def wait_all(students: list[Student], condition, timeout_s: float) -> dict[Student, float]:
    """Poll `condition(student)` for all of them; seconds until each became true (missing:
    never)."""
    t0, done = time.monotonic(), {}
    while len(done) < len(students) and time.monotonic() - t0 < timeout_s:
        for s in students:
            if s not in done and condition(s):
                done[s] = time.monotonic() - t0
        students[0].page.wait_for_timeout(100)  # lets playwright deliver the websocket events
    return done


@pytest.fixture(scope="module")
def students(deployment, browser):
    opened = []
    try:
        for url_path, ckpt, sentence, layer, head in STUDENTS:
            opened.append(Student(browser, deployment.url))
            opened[-1].open(url_path, ckpt=ckpt, s=sentence, layer=layer, head=head)
        yield opened
    finally:
        for s in opened:
            s.close()


def request(deployment, method: str, path: str,
            headers: dict[str, str]) -> http.client.HTTPResponse:
    """One HTTPS request through the proxy, as a browser at the example's host name would send
    it."""
    conn = http.client.HTTPSConnection("127.0.0.1", deployment.listen_port, timeout=30,
                                       # the throwaway certificate
                                       context=ssl._create_unverified_context())
    conn.request(method, path,
                 headers={"Host": f"{proxy.HOST}:{deployment.listen_port}", **headers})
    response = conn.getresponse()
    response.body = response.read()
    conn.close()
    return response


def process_of(deployment, session: str) -> int:
    """The pid of the one process that ran this Streamlit session (from the run log)."""
    pids = {r["pid"] for r in deployment.runs() if r["session"] == session}
    assert len(pids) == 1, f"session {session} ran on {pids}"
    return pids.pop()


# --- the tests ------------------------------------------------------------------------------------

@browser_test
def test_the_app_through_the_proxy(deployment, students):
    """The six students' pages loaded through the proxy (the fixture: each waited until every chart
    on its page was drawn); one of them types a sentence."""
    charts = '[data-testid="stMain"] [data-testid="stPlotlyChart"] svg.main-svg'
    assert all(s.problems() == [] for s in students)
    assert sum(s.page.locator(charts).count() for s in students) > 0, ("no chart drawn through the "
                                                                       "proxy")
    student = next(s for s, (url_path, *_) in zip(students, STUDENTS) if url_path == "attention")
    student.commit("a dog plays in the park .")
    assert student.problems() == [] and student.page.locator(charts).count() > 0

    cookies = student.cookies()
    sticky = cookies[proxy.STICKY_COOKIE]
    assert (sticky["value"] in ("a", "b") and sticky["httpOnly"] and sticky["secure"]
            and sticky["sameSite"] == "Lax")
    assert (process_of(deployment, student.sessions[-1])
            == deployment.apps[deployment.port_named(sticky["value"])].pid), \
        "the cookie does not name the process that ran the session"

    # XSRF protection is on: an upload without the token is refused; with it, it gets past the
    # check.
    xsrf = cookies["_streamlit_xsrf"]["value"]
    upload = f"/_stcore/upload_file/{student.sessions[-1]}/file-1"
    cookie = f"{proxy.STICKY_COOKIE}={sticky['value']}; _streamlit_xsrf={xsrf}"
    assert request(deployment, "PUT", upload, {"Cookie": cookie}).status == 403
    assert request(deployment, "PUT", upload, {"Cookie": cookie, "X-Xsrftoken": xsrf}).status != 403
    # The origin check is on (server.enableCORS): no page elsewhere is allowed to read the app's
    # answers. (The websocket's check, which admitted these pages through the proxy, would refuse
    # such a page too; asking it would send the server looking up its external address, so it is not
    # asked here.)
    answer = request(deployment, "GET", "/_stcore/host-config",
                     {"Origin": "https://elsewhere.example"})
    assert answer.status == 200 and answer.getheader("Access-Control-Allow-Origin") is None


@browser_test
def test_the_frontend_comes_from_nginx_compressed(deployment, students):
    """Streamlit's scripts, styles and fonts come from deploy/static_files.py's copy, compressed for
    a browser that takes gzip, and never from the app processes; a file the copy lacks is still
    asked of the app."""
    static = [e for e in proxy.access_log(deployment.workdir)
              if e["request"].split()[1].startswith("/static/")]
    assert len(static) > 10 and all(e["status"] in (200, 304) and not e["ports"] for e in static)
    plotly = next((deployment.workdir / "static-root" / "static" / "js").glob("PlotlyChart.*.js"))
    path = f"/static/js/{plotly.name}"
    assert any(e["request"].split()[1] == path for e in static), "no page asked for plotly.js"
    packed, plain = (request(deployment, "GET", path, {"Accept-Encoding": "gzip"}),
                     request(deployment, "GET", path, {}))
    assert (packed.getheader("Content-Encoding") == "gzip"
            and "immutable" in packed.getheader("Cache-Control"))
    assert plain.getheader("Content-Encoding") is None
    assert len(packed.body) == Path(f"{plotly}.gz").stat().st_size < plotly.stat().st_size / 2
    assert gzip.decompress(packed.body) == plain.body == plotly.read_bytes()
    # (the app answers with its page)
    request(deployment, "GET", "/static/js/not-in-the-copy.js", {})
    assert proxy.access_log(deployment.workdir)[-1]["ports"], ("a file the copy lacks was not "
                                                               "asked of an app process")


@browser_test
def test_each_browser_stays_on_one_process(deployment, students):
    # Every connection through the proxy drops at once (its worker dies; nginx starts another), as
    # when a lecture hall's Wi-Fi goes down for a moment: each browser reconnects and reruns its
    # page.
    finished = {s: s.finished for s in students}
    for pid in deployment.nginx_workers():
        os.kill(pid, signal.SIGKILL)
    back = wait_all(students, lambda s: s.back_after(finished[s]), WAIT_MS / 1000)
    assert len(back) == len(students), "a browser did not reconnect"

    served, runs = {}, deployment.runs()
    for student in students:
        assert len(student.sessions) == 1, ("after the reconnect a browser got a new session: it "
                                            "changed process")
        # its first run, and the one after
        assert sum(r["session"] == student.sessions[0] for r in runs) >= 2
        # every run of its session: one process
        served[student] = process_of(deployment, student.sessions[0])
        port = deployment.port_of_pid(served[student])
        assert student.cookies()[proxy.STICKY_COOKIE]["value"] == deployment.cookie(port)
        assert student.problems() == []
    assert set(served.values()) == {p.pid for p in deployment.apps.values()}, ("the browsers all "
                                                                               "went to one "
                                                                               "process")
    # nginx sent every request that carried a cookie, and that it did not answer itself, to the
    # process it names first.
    requests = [e for e in proxy.access_log(deployment.workdir) if e["cookie"] in ("a", "b")
                and e["ports"]]
    assert requests and all(e["ports"][0] == deployment.port_named(e["cookie"]) for e in requests)


@browser_test
def test_a_lost_process_is_survived(deployment, students, browser):
    victim = deployment.port_of_pid(process_of(deployment, students[0].sessions[-1]))
    survivor = next(port for port in deployment.app_ports if port != victim)
    survivor_pid = deployment.apps[survivor].pid
    affected = [s for s in students if process_of(deployment, s.sessions[-1]) != survivor_pid]
    others = [s for s in students if s not in affected]
    assert affected and others, "the students should be on both processes"
    before = {s: (s.state(), s.finished, s.sockets, list(s.sessions)) for s in students}

    killed = time.monotonic()
    deployment.kill_app(victim)
    back = wait_all(affected, lambda s: s.back_after(before[s][1]), 2 * REDRAWN_LIMIT_S)
    assert len(back) == len(affected), (f"{len(affected) - len(back)} of {len(affected)} sessions "
                                        "did not come back")
    rerunning = [s.started[s.sessions[-1]] - killed for s in affected]
    print(f"after the kill, the sessions' runs started on the other process after "
          f"{sorted(round(t, 2) for t in rerunning)} s, were over and drawn "
          f"after {sorted(round(t, 2) for t in back.values())} s")
    assert max(rerunning) <= RECONNECT_LIMIT_S
    assert max(back.values()) <= REDRAWN_LIMIT_S
    for s in affected:
        state, _, sockets, sessions = before[s]
        assert s.state() == state, "the page came back different"
        assert s.problems() == []
        assert s.sockets == sockets + 1, "the page was reloaded, or reconnected more than once"
        assert (s.sessions[-1] not in sessions
                and process_of(deployment, s.sessions[-1]) == survivor_pid)
        assert s.cookies()[proxy.STICKY_COOKIE]["value"] == deployment.cookie(survivor)
    for s in others:
        assert (s.state(), s.finished, s.sockets, s.sessions) == before[s], ("a session on the "
                                                                             "survivor noticed")
        assert s.problems() == []

    # Restarted, the process is back in the pool once nginx tries it again (fail_timeout, 10 s).
    restarted = deployment.start_app(victim).pid
    probe = {"Cookie": f"{proxy.STICKY_COOKIE}={deployment.cookie(victim)}"}
    deadline = time.monotonic() + 60
    while (f"{proxy.STICKY_COOKIE}={deployment.cookie(victim)};"
           not in (request(deployment, "GET", "/_stcore/health",
                           probe).getheader("Set-Cookie") or "")):
        assert time.monotonic() < deadline, ("nginx did not take the restarted process back within "
                                             "60 s")
        time.sleep(0.5)
    newcomer = Student(browser, deployment.url, cookie=deployment.cookie(victim))
    try:
        newcomer.open("shapes", ckpt="tiny-de-en", s="ein hund .")
        assert process_of(deployment, newcomer.sessions[-1]) == restarted
    finally:
        newcomer.close()
    # The moved students stay where their sessions now are: a new sentence runs there, and a CSV
    # download (a file that lives in the process that made it) is found.
    moved = affected[0]
    moved.commit("ein kind läuft am strand .")
    assert process_of(deployment, moved.sessions[-1]) == survivor_pid
    with moved.page.expect_download(timeout=WAIT_MS) as download:
        moved.page.get_by_role("button", name="Download the data (CSV)").first.click()
    assert (download.value.failure() is None
            and Path(download.value.path()).read_bytes().count(b"\n") > 1)
    assert moved.problems() == []
