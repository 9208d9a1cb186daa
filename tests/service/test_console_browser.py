"""The console in a real browser (Debian's headless chromium through chromedriver) against a
real server: every page loads with no error in the browser's console, a rule added in the
console changes a relation it shows, a proof is drawn as a tree, the epochs are plotted, the
live feed shows a write as it lands, and a hostile symbol is shown as text, never run."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.conftest import IN_CI, REPO_ROOT
from tests.service.conftest import READ_TOKEN, WRITE_TOKEN, Databases, Server, server_settings

# One worker runs them all (`--dist loadgroup`): one server and one browser for the module.
pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("console")]

CHROMIUM = shutil.which("chromium")
CHROMEDRIVER = shutil.which("chromedriver")
HOSTILE = "<img src=x onerror=window.__xss=1>"
CLOSING = "</script><script>window.__xss=2</script>"
PROGRAM = f""".decl edge(x: number, y: number)
.decl label(x: number, s: symbol)
edge(1, 2). edge(2, 3).
label(1, "{HOSTILE}"). label(2, "{CLOSING}"). label(7, "alone").
tc(x, y) :- edge(x, y).
tc(x, z) :- tc(x, y), edge(y, z).
lonely(x) :- label(x, _), !edge(x, _).
degree(x, c) :- label(x, _), c = count : {{ edge(x, _) }}.
"""
CHAIN = 600
"""Edges of a chain loaded as two halves, whose joining and closing into a cycle makes an
Update of 270,000 tuples, three times the Bootstrap's and past its depth: under a deadline
without its floor (`REASONER_MIN_UPDATE_SECONDS=0`) and a millionth of the Bootstrap's time,
it stops at its first check whatever the machine's speed."""
SCREENSHOTS = REPO_ROOT / "out" / "console-screenshots"
ROUTES = [
    "program",
    "relations",
    "relations/tc",
    "relations/label",
    "query",
    "explain",
    "epochs",
    "epochs/1",
    "live",
    "health",
]


@pytest.fixture(scope="module")
def server(databases: Databases, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    running = Server(
        tmp_path_factory.mktemp("console"), server_settings(databases.new("sqlite"))
    ).start()
    with running.client() as client:
        posted = client.post("/v1/rules", content=PROGRAM, headers={"content-type": "text/plain"})
        assert posted.status_code == 200, posted.text
    yield running
    running.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if CHROMIUM is None or CHROMEDRIVER is None:
        problem = "chromium and chromedriver are needed (`make test` installs them)"
        if IN_CI:
            pytest.fail(problem)
        pytest.skip(problem)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(argument)
    options.add_argument("--window-size=1280,900")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_script_timeout(30)
    yield driver
    driver.quit()


def _wait(condition: Callable[[], Any], what: str, timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


class Console:
    """The console in the browser, with a token, and what its pages show."""

    def __init__(self, driver: Any, server: Server, token: str) -> None:
        self.driver = driver
        self.base = f"{server.base_url}/console"
        driver.get(self.base + "#/health")  # the only page that reads nothing behind a token
        _wait(lambda: self.page() == "health", "the health page")
        self.errors()  # reading the log empties it
        self.driver.execute_script("sessionStorage.setItem('reasoner-token', arguments[0])", token)

    def page(self) -> str | None:
        return self.driver.execute_script("return document.getElementById('main').dataset.page")

    def open(self, route: str) -> str:
        self.driver.execute_script("document.getElementById('main').dataset.page = ''")
        target = f"{self.base}#/{route}"
        if self.driver.current_url == target:
            self.driver.refresh()  # the same address again is no navigation
        else:
            self.driver.get(target)
        _wait(lambda: self.page() == route, f"page {route}")
        return self.text("main")

    def text(self, selector: str) -> str:
        return self.driver.execute_script(
            "const n = document.querySelector(arguments[0]); return n ? n.textContent : null",
            selector,
        )

    def find(self, selector: str) -> Any:
        from selenium.webdriver.common.by import By

        return self.driver.find_element(By.CSS_SELECTOR, selector)

    def count(self, selector: str) -> int:
        return self.driver.execute_script(
            "return document.querySelectorAll(arguments[0]).length", selector
        )

    def errors(self) -> list[str]:
        return [e["message"] for e in self.driver.get_log("browser") if e["level"] == "SEVERE"]


@pytest.fixture
def console(browser: Any, server: Server) -> Console:
    return Console(browser, server, WRITE_TOKEN)


def test_every_page_loads_with_no_console_error(console: Console) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for route in ROUTES:
        text = console.open(route)
        assert "Could not load" not in text, (route, text)
        console.driver.save_screenshot(str(SCREENSHOTS / f"{route.replace('/', '-')}.png"))
    assert console.errors() == []


def test_the_strata_are_drawn_as_a_graph(console: Console) -> None:
    console.open("program")
    edges = console.driver.execute_script(
        "return [...document.querySelectorAll('#strata-graph path.edge')]"
        ".map(e => [e.dataset.from, e.dataset.to, e.classList[1]])"
    )
    assert sorted(map(tuple, edges)) == [
        ("edge", "degree", "aggregate"),
        ("edge", "lonely", "negative"),
        ("edge", "tc", "positive"),
        ("label", "degree", "positive"),
        ("label", "lonely", "positive"),
        ("tc", "tc", "positive"),
    ]
    nodes = console.driver.execute_script(
        "return [...document.querySelectorAll('#strata-graph .graph-node')]"
        ".map(n => n.dataset.relation)"
    )
    assert sorted(nodes) == ["degree", "edge", "label", "lonely", "tc"]


def test_a_hostile_symbol_is_shown_as_text(console: Console) -> None:
    text = console.open("relations/label")
    assert HOSTILE in text and CLOSING in text
    console.open("query")
    console.find("#query-text").send_keys("label(x, s)")
    console.find("#query-form button").click()
    _wait(lambda: CLOSING in (console.text("#query-answer") or ""), "the query's answer")
    assert HOSTILE in console.text("#query-answer")
    assert console.count("main img") == 0
    assert console.count("main script") == 0
    assert console.driver.execute_script("return window.__xss") is None
    assert console.errors() == []


def test_a_rule_added_in_the_console_changes_a_relation_it_shows(console: Console) -> None:
    console.open("program")
    console.find("#rule-text").send_keys("reach(y) :- tc(1, y).")
    console.find("#rule-form button").click()
    _wait(lambda: "reach" in (console.text("#rules") or ""), "the new rule in the list")
    text = console.open("relations/reach")
    assert "reach (2 tuples)" in text
    rows = console.driver.execute_script(
        "return [...document.querySelectorAll('#relation-rows tbody tr')].map(r => r.textContent)"
    )
    assert sorted(rows) == ["2", "3"]
    # And removed again from the console.
    console.open("program")
    rule = console.driver.execute_script(
        "return [...document.querySelectorAll('#rules tbody tr')]"
        ".find(r => r.textContent.includes('reach(y)')).querySelector('button').dataset.rule"
    )
    console.find(f'button[data-rule="{rule}"]').click()
    _wait(lambda: "reach(y)" not in (console.text("#rules") or "reach(y)"), "the rule removed")
    assert console.errors() == []


def test_a_rule_error_is_shown_at_its_line_and_column(console: Console) -> None:
    console.open("program")
    console.find("#rule-text").send_keys("ok(x) :- edge(x, _).\nbad(x) :- edge(x, y")
    console.find("#rule-form button").click()
    error = _wait(lambda: console.text("#rule-status .error"), "the error")
    assert error.startswith("2:"), error
    assert "bad(x) :- edge(x, y" in error and "^" in error
    # A refused write changed nothing.
    assert "ok(x)" not in console.open("program")


def test_the_proof_of_a_tuple_is_a_tree(console: Console) -> None:
    console.open("explain")
    console.driver.execute_script(
        "const s = document.getElementById('explain-relation'); s.value = 'tc';"
        "s.dispatchEvent(new Event('change'))"
    )
    console.find('#explain-form input[data-column="x"]').send_keys("1")
    console.find('#explain-form input[data-column="y"]').send_keys("3")
    console.find("#explain-form button").click()
    _wait(lambda: console.count("#proof .node"), "the proof")
    nodes = console.driver.execute_script(
        "return [...document.querySelectorAll('#proof .node')].map(n => n.firstChild.textContent)"
    )
    assert nodes == ["tc(1, 3)", "tc(1, 2)", "edge(1, 2)", "edge(2, 3)"]
    # The root's children are its rule instance's premises.
    children = console.driver.execute_script(
        "return [...document.querySelectorAll('#proof > ul > li > ul > li > .node')]"
        ".map(n => n.firstChild.textContent)"
    )
    assert children == ["tc(1, 2)", "edge(2, 3)"]
    # A missing tuple: each rule's failing literal is marked.
    console.find('#explain-form input[data-column="x"]').clear()
    console.find('#explain-form input[data-column="x"]').send_keys("3")
    console.find("#explain-form button").click()
    _wait(lambda: console.count("#why-not .failing"), "the why-not")
    assert "does not hold" in console.text("#explain-answer")


def test_the_epochs_are_plotted_one_bar_each(console: Console, server: Server) -> None:
    with server.client() as client:
        epochs = client.get("/v1/epochs?limit=200").json()["epochs"]
    console.open("epochs")
    timed = [e for e in epochs if e["seconds"] is not None]
    assert console.count("#epoch-plot rect.bar") == len(timed)
    assert console.count("#epoch-plot rect.bar.update") == sum(
        e["strategy"] == "update" and not e["fallback_reason"] for e in timed
    )
    # Live: an epoch made through the API appears without reloading.
    with server.client() as client:
        made = client.post("/v1/facts", json={"facts": {"label": [[9, "new"]]}}).json()["epoch"]
    _wait(lambda: console.count(f'#epoch-plot rect[data-epoch="{made}"]'), "the new epoch's bar")
    console.find(f'#epoch-plot rect[data-epoch="{made}"]').click()
    _wait(lambda: console.page() == f"epochs/{made}", "the epoch's page")


def test_a_forced_fallback_is_plotted_as_one(
    browser: Any, databases: Databases, tmp_path_factory: pytest.TempPathFactory
) -> None:
    settings = server_settings(
        databases.new("sqlite"),
        REASONER_SWITCHING_PARAMETER="0.000001",
        REASONER_MIN_UPDATE_SECONDS="0",
    )
    server = Server(tmp_path_factory.mktemp("console-fallback"), settings).start()
    try:
        with server.client() as client:
            program = ".decl edge(x: number, y: number)\ntc(x, y) :- edge(x, y).\n"
            program += "tc(x, z) :- tc(x, y), edge(y, z).\n"
            client.post("/v1/rules", content=program, headers={"content-type": "text/plain"})
            # Two chains, bulk loaded (a Bootstrap), then joined and closed into a cycle: the
            # Update derives three times the tuples the Bootstrap did, deeper than it went,
            # which no forecast keeps past the deadline.
            middle = CHAIN // 2
            chain = "".join(f"{i}\t{i + 1}\n" for i in range(CHAIN) if i != middle)
            client.post(
                "/v1/relations/edge/facts",
                content=chain,
                headers={"content-type": "text/tab-separated-values"},
            ).raise_for_status()
            closing = {"edge": [[middle, middle + 1], [CHAIN, 0]]}
            closed = client.post("/v1/facts", json={"facts": closing}).json()
            epochs = client.get("/v1/epochs").json()["epochs"]
        assert closed["strategy"] == "bootstrap" and closed["fallback_reason"], closed
        console = Console(browser, server, READ_TOKEN)
        console.open("epochs")
        fallbacks = sum(bool(e["fallback_reason"]) for e in epochs)
        assert console.count("#epoch-plot rect.bar.fallback") == fallbacks
        assert console.count(f'#epoch-plot rect.fallback[data-epoch="{closed["epoch"]}"]') == 1
        assert console.errors() == []
    finally:
        server.stop()


def test_the_live_feed_shows_a_write_as_it_lands(console: Console, server: Server) -> None:
    console.open("live")
    _wait(lambda: "following" in (console.text("#live-state") or ""), "the feed")
    with server.client() as client:
        client.post("/v1/facts", json={"facts": {"edge": [[3, 4]]}}).raise_for_status()
    _wait(lambda: console.count('#live-feed .change[data-relation="edge"]'), "the change")
    assert "+(3, 4)" in console.text("#live-feed")
    # Paused, the next write is held back until resumed.
    console.find("#live-pause").click()
    with server.client() as client:
        client.request("DELETE", "/v1/facts", json={"facts": {"edge": [[3, 4]]}}).raise_for_status()
    time.sleep(1.0)
    assert "-(3, 4)" not in console.text("#live-feed")
    console.find("#live-pause").click()
    _wait(lambda: "-(3, 4)" in console.text("#live-feed"), "the held change")
    assert console.errors() == []


def test_health_shows_readiness_quarantine_and_memory(console: Console) -> None:
    console.open("health")
    assert console.text("#quarantined") == "none"
    memory = console.text("#memory")
    assert memory.startswith("resident ") and "% used" in memory and "unknown" not in memory
    assert console.count("main meter") == 1


def test_the_read_token_looks_but_cannot_write(browser: Any, server: Server) -> None:
    reader = Console(browser, server, READ_TOKEN)
    reader.open("program")
    reader.find("#rule-text").send_keys("nope(x) :- edge(x, _).")
    reader.find("#rule-form button").click()
    error = _wait(lambda: reader.text("#rule-status .error"), "the refusal")
    assert "forbidden" in error
