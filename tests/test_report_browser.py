"""The HTML report in a real headless browser (Debian's chromium, driven by selenium through
chromium-driver): it renders, every image loads, no console or script error, Chinese glyphs are
drawn with a CJK font (not tofu boxes), and a screenshot of each language is kept as an artefact
in results/test-artifacts/ (printed in the output).

scripts/setup-system.sh installs chromium, chromium-driver and fonts-noto-cjk (`make test` runs it
as root). Without them the test skips, except under CI=true, where it fails.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_report import render_suite

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "results" / "test-artifacts"
CHROMIUM = ("chromium", "chromium-browser", "google-chrome")
# One CJK string, and a code point no font has (U+10FFFD, private use): the browser draws it as a
# "tofu" box. Drawn with a CJK font, the string's width differs from the boxes' width.
CJK_TEXT = "吞吐量加速比扩展效率"
TOFU_TEXT = "\U0010fffd" * len(CJK_TEXT)


def _missing(reason: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{reason} (CI=true: the browser test must run; see scripts/setup-system.sh)")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        _missing("selenium is not installed (pip install -e '.[dev]')")
    binary = next((p for p in map(shutil.which, CHROMIUM) if p), None)
    driver_path = shutil.which("chromedriver")
    if not binary or not driver_path:
        _missing("no chromium or chromedriver (apt-get install chromium chromium-driver)")
    options = webdriver.ChromeOptions()
    options.binary_location = str(binary)
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(flag)
    options.add_argument("--window-size=1280,2000")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=str(driver_path)), options=options)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The reports of tests/test_report.py's results folder (every kind of cell and section)."""
    root = render_suite(tmp_path_factory.mktemp("browser"))
    return {lang: root / f"results/report/report.{lang}.html" for lang in ("en", "zh")}


IMAGES_JS = """
return Array.from(document.images).map(i => [i.complete, i.naturalWidth, i.naturalHeight]);
"""
WIDTH_JS = """
const span = document.createElement('span');
span.style.fontSize = '32px';
span.style.whiteSpace = 'nowrap';
span.textContent = arguments[0];
document.body.appendChild(span);
const width = span.getBoundingClientRect().width;
span.remove();
return width;
"""
FONT_JS = "return document.fonts.check('16px \"Noto Sans CJK SC\"', arguments[0]);"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_report_renders_in_a_browser(browser: Any, reports: dict[str, Path], lang: str) -> None:
    browser.get(reports[lang].as_uri())
    assert browser.execute_script("return document.readyState") == "complete"
    assert browser.title == "dlperf test report"
    sections = browser.execute_script(
        "return Array.from(document.querySelectorAll('section')).map(s => s.id);"
    )
    assert sections[:3] == ["summary", "read-first", "results"]
    images = browser.execute_script(IMAGES_JS)
    assert len(images) == 4
    for complete, width, height in images:
        assert complete and width > 0 and height > 0  # every plot decoded
    errors = [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]
    assert not errors, errors
    heading = browser.execute_script("return document.querySelector('h2').innerText")
    assert heading == ("结论概览" if lang == "zh" else "Summary")
    if lang == "zh":
        cjk = browser.execute_script(WIDTH_JS, CJK_TEXT)
        tofu = browser.execute_script(WIDTH_JS, TOFU_TEXT)
        # a CJK font draws each ideograph about one em (32 px) wide; boxes differ
        assert abs(cjk - tofu) > 4, (cjk, tofu)
        assert 0.8 * 32 * len(CJK_TEXT) <= cjk <= 1.2 * 32 * len(CJK_TEXT)
        assert browser.execute_script(FONT_JS, CJK_TEXT)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / f"report.{lang}.png"
    height = browser.execute_script("return document.body.scrollHeight")
    browser.set_window_size(1280, min(int(height) + 100, 12000))
    assert browser.save_screenshot(str(shot))
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    print(f"screenshot: {shot}")
