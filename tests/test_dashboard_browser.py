"""The dashboard of ``scrapy serve`` in a real browser: Playwright driving Debian's Chromium, headless, against the
server and a copy of the fixture site on loopback. A user logs in, probes and adds the site, starts a crawl, watches
its progress change without reloading, sets a one-minute schedule and sees the scheduled run in the history chart,
reads a run's report, searches and opens a result, and removes the source. A page whose title and text are HTML is
shown as text. Screenshots are taken on the way and checked for what they must show (not compared pixel by pixel);
they are kept under the test's temporary folder."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from PIL import Image

from docscraper.crawl.rendering import chromium_problem
from tests.mockserver import DocsServer, copy_site
from tests.test_server import server_env, serving

CHROMIUM = "/usr/bin/chromium"
HOSTILE_TITLE = "<img src=x onerror=alert(1)> & <b>Quokka</b>"
# the page's title as docscraper takes it: its first heading
HOSTILE_HEADING = '<script>alert("quokka")</script> Quokka handling'
HOSTILE_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title></head>
<body><article>
<h1>&lt;script&gt;alert("quokka")&lt;/script&gt; Quokka handling</h1>
<p>The quokka relay forwards every marsupial event to the quokka sink. Write &lt;b&gt;bold&lt;/b&gt; in a quokka
template and it stays as text: &lt;img src=x onerror=alert(2)&gt;.</p>
</article></body></html>
"""


def hostile_site(root: Path) -> Path:
    """The fixture site with one more guide page whose title and text hold HTML, linked from the guide's index."""
    (root / "docs" / "guide" / "hostile.html").write_text(
        HOSTILE_PAGE.format(title=HOSTILE_TITLE.replace("&", "&amp;").replace("<", "&lt;")), encoding="utf-8")
    index = root / "docs" / "guide" / "index.html"
    text = index.read_text(encoding="utf-8")
    link = '<li class="md-nav__item"><a class="md-nav__link" href="/docs/guide/concepts.html">Concepts</a></li>'
    assert link in text
    index.write_text(text.replace(link, link + '\n<li><a href="/docs/guide/hostile.html">Quokkas</a></li>'),
                     encoding="utf-8")
    return root


def check_screenshot(path: Path, *, colour: tuple[int, int, int] | None = None, least: int = 0) -> None:
    """A real picture: big enough, not one flat colour, and (with *colour*) at least *least* pixels near it."""
    with Image.open(path) as image:
        rgb = image.convert("RGB")
        assert rgb.width >= 300 and rgb.height >= 100, rgb.size
        extrema = rgb.getextrema()
        assert any(low != high for low, high in extrema), f"{path.name} is one flat colour"
        if colour is not None:
            near = sum(count for count, pixel in (rgb.getcolors(rgb.width * rgb.height) or [])
                       if all(abs(a - b) <= 24 for a, b in zip(pixel, colour, strict=True)))
            assert near >= least, f"{path.name}: {near} pixels near {colour}, wanted {least}"


@pytest.mark.render
@pytest.mark.crawl
def test_the_dashboard_in_chromium(tmp_path: Path) -> None:
    from playwright.sync_api import Dialog, expect, sync_playwright

    problem = chromium_problem(CHROMIUM)
    if problem:
        pytest.fail(f"{problem}; the browser tests need it (.ci/run and the README install it)", pytrace=False)
    shots = tmp_path / "screenshots"
    shots.mkdir()
    site_root = hostile_site(copy_site(tmp_path / "site"))
    env = server_env(tmp_path / "data")
    with DocsServer(site_root).start() as site, serving(tmp_path, "--tick", "2", env=env) as served, \
            sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                             args=["--no-sandbox", "--disable-gpu"])
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        page = context.new_page()
        dialogs: list[str] = []

        def dismiss(dialog: Dialog) -> None:
            dialogs.append(dialog.message)
            dialog.dismiss()

        page.on("dialog", dismiss)
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))

        # logging in: the address the server printed
        page.goto(f"{served.base}/login?token={served.token}")
        expect(page.locator("h1")).to_have_text("Sources")
        assert page.url == f"{served.base}/"
        page.screenshot(path=shots / "01-sources-empty.png", full_page=True)

        # adding the site: the probe first, then the source
        form = page.locator("#add-source")
        form.locator("input[name=name]").fill("relay")
        form.locator("input[name=url]").fill(site.url("/docs/"))
        form.get_by_role("button", name="Probe").click()
        probe = page.locator("#probe")
        expect(probe).to_contain_text("llms.txt")
        expect(probe).to_contain_text(site.url("/docs/llms.txt"))
        expect(probe).to_contain_text("pages listed")
        page.screenshot(path=shots / "02-probe.png", full_page=True)
        expect(form.locator("input[name=url]")).to_have_value(site.url("/docs/"))  # kept for the next step
        form.get_by_role("button", name="Add source").click()
        expect(page.locator("h1")).to_have_text("relay")
        expect(page.locator(".notice")).to_contain_text("Source added")

        # a crawl, watched on the Crawls page while it runs: the rows change without a reload
        page.get_by_role("button", name="Recrawl", exact=True).click()
        expect(page.locator(".notice")).to_contain_text("Crawl started")
        page.get_by_role("link", name="Crawls").click()
        page.evaluate("window.notReloaded = true")
        row = page.locator("#crawls tr[data-run]").first
        expect(row).to_contain_text("running", timeout=90_000)
        seen = set()
        deadline = time.monotonic() + 240
        while "finished" not in (state := row.locator("td").nth(1).inner_text()):
            seen.add((state, row.locator("td").nth(5).inner_text()))
            if len(seen) == 2:
                page.screenshot(path=shots / "03-crawl-running.png", full_page=True)
            assert time.monotonic() < deadline, seen
            page.wait_for_timeout(500)
        assert page.evaluate("window.notReloaded === true"), "the page was reloaded"
        assert any(state == "running" for state, _ in seen) and len(seen) >= 2, seen
        expect(row.locator("td").nth(13)).to_have_text("partial")  # flaky.html always answers 500
        first_run = row.get_attribute("data-run")

        # a one-minute schedule, set on the source's page; the server starts the next run itself
        page.goto(f"{served.base}/sources/relay")
        page.locator("input[name=schedule]").fill("1m")
        page.get_by_role("button", name="Save schedule").click()
        expect(page.locator(".notice")).to_contain_text("Schedule saved")
        expect(page.locator("dl.facts")).to_contain_text("Next scheduled run")
        deadline = time.monotonic() + 240
        while page.locator("#runs tbody tr").count() < 2 or "running" in page.locator("#runs").inner_text():
            assert time.monotonic() < deadline, page.locator("#runs").inner_text()
            page.wait_for_timeout(4000)  # each reload is several requests: stay under the server's rate limit
            page.reload()
        # the schedule has done its part: cleared, so that no later run moves the rows under the steps below
        page.locator("input[name=schedule]").fill("")
        page.get_by_role("button", name="Save schedule").click()
        expect(page.locator(".notice")).to_contain_text("Schedule saved")
        while "running" in page.locator("#runs").inner_text():  # one may have started just before
            assert time.monotonic() < deadline, page.locator("#runs").inner_text()
            page.wait_for_timeout(4000)
            page.reload()
        runs = page.locator("#runs tbody tr")
        first_row = runs.filter(has=page.locator(f"a[href$='/runs/{first_run}']"))
        expect(runs.first.locator("td").nth(2)).to_have_text("due")  # the scheduled run: what is due only
        expect(runs.first.locator("td").nth(4)).to_have_text("0")  # nothing new
        expect(first_row.locator("td").nth(4)).not_to_have_text("0")
        chart = page.locator("#chart-pages img")
        expect(chart).to_be_visible()
        assert page.evaluate("document.querySelector('#chart-pages img').naturalWidth") > 300
        chart.screenshot(path=shots / "04-history-chart.png")
        check_screenshot(shots / "04-history-chart.png", colour=(0x2E, 0x7D, 0x32), least=200)  # the "new" bar
        check_screenshot(shots / "04-history-chart.png", colour=(0x90, 0xA4, 0xAE), least=200)  # "unchanged"
        page.screenshot(path=shots / "05-source.png", full_page=True)

        # the first run's report: items filtered by status, the change feed with the hostile title as text
        first_row.get_by_role("link").click()
        page.wait_for_url(f"**/runs/{first_run}")
        page.locator("select[name=status]").select_option("failed")
        page.get_by_role("button", name="Filter").click()
        expect(page.locator("#items tbody tr")).to_have_count(1)
        expect(page.locator("#items")).to_contain_text(site.url("/docs/flaky.html"))
        expect(page.locator("#changes")).to_contain_text(HOSTILE_HEADING)
        page.screenshot(path=shots / "06-run.png", full_page=True)

        # search: the answer, its heading, and the page it links to; hostile text shown as text
        page.get_by_role("link", name="Search").click()
        page.locator("input[name=q]").fill("how many times is a failed delivery retried")
        page.get_by_role("button", name="Search").click()
        first = page.locator("#results li.result").first
        expect(first.locator("h3")).to_contain_text("Delivery and retries")
        page.screenshot(path=shots / "07-search.png", full_page=True)
        page.locator("input[name=q]").fill("where does the quokka relay forward marsupial events")
        page.get_by_role("button", name="Search").click()
        expect(first.locator("h3")).to_have_text(HOSTILE_HEADING)
        expect(first.locator("pre.chunk")).to_contain_text("onerror=alert(2)")
        assert page.locator("#results script, #results b, img[src=x]").count() == 0
        first.locator("h3 a").click()
        page.wait_for_url(site.url("/docs/guide/hostile.html"))
        page.go_back()

        # removing the source, after confirming by its name
        page.goto(f"{served.base}/sources/relay/remove")
        page.get_by_role("button", name="Remove relay").click()  # the field is required: nothing is sent
        expect(page.locator("h1")).to_have_text("Remove relay?")
        page.locator("input[name=confirm]").fill("relay")
        page.get_by_role("button", name="Remove relay").click()
        expect(page.locator(".notice")).to_contain_text("Source removed")
        expect(page.locator("#sources")).to_have_count(0)
        page.screenshot(path=shots / "08-removed.png", full_page=True)

        assert dialogs == [] and errors == [], (dialogs, errors)
        browser.close()
    for shot in sorted(shots.glob("*.png")):
        check_screenshot(shot)
    assert len(list(shots.glob("*.png"))) == 8
    check_screenshot(shots / "05-source.png", colour=(0x15, 0x65, 0xC0), least=500)  # the one-series charts
