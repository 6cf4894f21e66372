"""The web console in headless Chromium (Debian's chromium-headless-shell), driven by
Playwright from PyPI with executable_path set (it never downloads a browser).

Usage: console.py URL TOKEN CSV_PATH OUT_DIR
Asserts on the page at every step; prints one JSON line of figures (first paint, scroll
frame times) for the caller. Screenshots go to OUT_DIR.
"""
import json
import os
import shutil
import sys
import time

from playwright.sync_api import expect, sync_playwright

URL, TOKEN, CSV_PATH, OUT = sys.argv[1:5]


def browser_path():
    for p in ("/usr/bin/chromium-headless-shell", "/usr/lib/chromium/chromium-headless-shell", "/usr/bin/chromium"):
        if os.path.exists(p):
            return p
    return shutil.which("chromium-headless-shell") or shutil.which("chromium")


def set_sql(page, text):
    page.locator(".cm-content").focus()
    page.keyboard.press("Escape")  # close a completion list left open
    page.keyboard.press("Control+A")
    page.keyboard.press("Delete")
    page.locator(".cm-content").fill(text)


def run(page, text):
    set_sql(page, text)
    page.keyboard.press("Control+Enter")
    expect(page.locator("#status")).not_to_have_text("running…", timeout=30000)


figures = {}
with sync_playwright() as p:
    browser = p.chromium.launch(
        executable_path=browser_path(),
        args=["--no-sandbox", "--disable-gpu", "--disable-background-networking",
              "--disable-component-update", "--disable-sync", "--no-first-run"],
    )
    page = browser.new_page(viewport={"width": 1280, "height": 860}, accept_downloads=True)
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))

    # First paint of the page from the local server.
    page.goto(URL + "/")
    paint = page.evaluate(
        "() => new Promise(r => { const f = () => { const e = performance.getEntriesByName('first-contentful-paint')[0]"
        " || performance.getEntriesByName('first-paint')[0]; e ? r(e.startTime) : setTimeout(f, 20); }; f(); })"
    )
    figures["first_paint_ms"] = paint
    assert paint < 1000, f"first paint {paint} ms"

    # Authentication on: the API refuses the page until the dialog gets a token.
    expect(page.locator("#login")).to_be_visible(timeout=10000)
    page.fill("#login-token", "tmp_wrong")
    page.click("#login-ok")
    expect(page.locator("#login-error")).to_have_text("That token was refused.", timeout=10000)
    page.fill("#login-token", TOKEN)
    page.click("#login-ok")
    expect(page.locator("#db option", has_text="console")).to_have_count(1, timeout=10000)
    page.select_option("#db", "console")

    # A query with a time column: grid and chart, one line per host.
    run(page, "SELECT time, host, usage FROM cpu ORDER BY time, host")
    expect(page.locator("#status")).to_contain_text("200 rows")
    assert page.get_attribute("#grid", "data-rows") == "200"
    expect(page.locator("#chart-box")).to_be_visible()
    assert page.get_attribute("#chart", "data-series") == "2", page.get_attribute("#chart", "data-series")
    assert page.get_attribute("#chart", "data-points") == "100"
    page.screenshot(path=os.path.join(OUT, "console-query.png"))

    # Zoom: drag across the chart, then query that range (the text is wrapped).
    box = page.locator("#chart .u-over").bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.25, box["y"] + box["height"] / 2)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.5, box["y"] + box["height"] / 2, steps=5)
    page.mouse.up()
    expect(page.locator("#zoom-query")).to_be_visible()
    page.click("#zoom-query")
    expect(page.locator("#status")).to_contain_text("rows")
    zoomed = int(page.get_attribute("#grid", "data-rows"))
    assert 0 < zoomed < 200, zoomed

    # Macros follow the range: $__timeFilter over the last 30 days keeps every row.
    page.select_option("#range", "last 30d")
    run(page, "SELECT time, host, usage FROM cpu WHERE $__timeFilter(time) ORDER BY time")
    expect(page.locator("#status")).to_contain_text("200 rows")

    # An error is shown and marked where the server says.
    run(page, "SELECT 1,\n  (2")
    expect(page.locator("#error")).to_contain_text("line 2 column 3")
    expect(page.locator(".cm-lintRange-error")).to_have_count(1)

    # Completion offers the session database's tables.
    set_sql(page, "SELECT * FROM cp")
    page.keyboard.press("Control+Space")
    expect(page.locator(".cm-tooltip-autocomplete")).to_contain_text("cpu", timeout=5000)
    page.keyboard.press("Escape")

    # EXPLAIN runs the text as a plan.
    set_sql(page, "SELECT count(*) FROM cpu")
    page.click("#explain")
    expect(page.locator("#status")).to_contain_text("rows")
    assert "plan" in page.locator("#grid .grid-head").inner_text().lower()

    # 100,000 rows: the grid keeps only the rows in view in the page, and scrolls.
    run(page, "SELECT value, value * 2 AS twice FROM generate_series(1, 100000)")
    expect(page.locator("#status")).to_contain_text("100,000 rows")
    in_dom = page.locator("#grid .grid-body .grid-row").count()
    assert in_dom < 200, in_dom
    frames = page.evaluate(
        """async () => {
          const s = document.querySelector('#grid .grid-scroll');
          const gaps = [];
          let last = performance.now();
          for (let i = 0; i < 120; i++) {
            s.scrollTop += 2000;
            await new Promise(r => requestAnimationFrame(r));
            const now = performance.now();
            gaps.push(now - last);
            last = now;
          }
          gaps.sort((a, b) => a - b);
          return { p50: gaps[60], p95: gaps[114], max: gaps[119], top: s.scrollTop };
        }"""
    )
    figures["scroll_frame_ms"] = frames
    assert frames["top"] > 200000, frames
    last_row = page.locator("#grid .grid-body .grid-row").last.inner_text()
    assert last_row.split()[0].isdigit()

    # Downloads: CSV from the page, Parquet from the server.
    run(page, "SELECT time, host, usage FROM cpu ORDER BY time, host LIMIT 5")
    with page.expect_download() as d:
        page.click("#dl-csv")
    text = open(d.value.path()).read()
    assert text.splitlines()[0] == "time,host,usage" and len(text.splitlines()) == 6, text
    with page.expect_download() as d:
        page.click("#dl-parquet")
    data = open(d.value.path(), "rb").read()
    assert data[:4] == b"PAR1" and data[-4:] == b"PAR1", data[:8]

    # Schema browser: tables, tags with value counts, series, partitions.
    page.click("nav button[data-tab=schema]")
    expect(page.locator("#schema-tree button.table", has_text="cpu")).to_be_visible()
    page.click("#schema-tree button.table >> text=cpu")
    expect(page.locator("#schema-detail dd[data-fact=series]")).to_have_text("2")
    expect(page.locator("#schema-detail tbody tr", has_text="host")).to_contain_text("tag")
    expect(page.locator("#schema-detail tbody tr", has_text="usage")).to_contain_text("field")
    page.screenshot(path=os.path.join(OUT, "console-schema.png"))

    # CSV import: the server's preview and type inference, a tag ticked, then the import.
    page.click("nav button[data-tab=import]")
    page.set_input_files("#csv-file", CSV_PATH)
    expect(page.locator("#csv-preview table")).to_be_visible()
    expect(page.locator(".type[data-column=temp]")).to_have_text("float")
    expect(page.locator(".type[data-column=ok]")).to_have_text("boolean")
    page.fill("#csv-table", "weather")
    page.check("input[data-tag=station]")
    expect(page.locator(".type[data-column=station]")).to_have_text("string")
    page.click("#csv-import")
    expect(page.locator("#csv-status")).to_contain_text("imported", timeout=10000)

    # The live metrics page (the token is an admin's): rates appear after two samples.
    page.click("nav button[data-tab=metrics]")
    expect(page.locator("[data-figure='rows written /s']")).not_to_have_text("", timeout=10000)
    expect(page.locator("[data-figure='rows written /s']")).not_to_have_text("–", timeout=10000)

    assert not errors, errors
    browser.close()

print(json.dumps(figures))
