"""The browser tools: one Chromium per session over playwright's sync API, started on first use and
closed at exit. playwright is imported only then; a task that never browses never loads it."""

import atexit
import functools
import shutil
import time

from amas_code import config, tools

BROWSERS = "chromium chromium-browser google-chrome google-chrome-stable chrome".split()


@functools.cache
def page() -> object:
    """The page of the session's one Chromium, started on first use and closed at exit."""
    from playwright.sync_api import Error, sync_playwright

    tools.REPORTED += (Error,)  # playwright's errors (timeouts, bad selectors) reach the model
    driver, settings = sync_playwright().start(), tools.STATE["config"]
    exe = settings.get("browser_path") or next(filter(None, map(shutil.which, BROWSERS)), None)
    try:  # none found: playwright's own browser, if `playwright install` was run
        browser = driver.chromium.launch(executable_path=exe, headless=settings["browser_headless"])
    except Error:
        driver.stop()
        raise tools.ToolError(config.WORDS["no_browser"]) from None
    atexit.register(driver.stop)  # playwright's driver closes the browser and removes its profile
    return browser.new_page()


def locate(what: str) -> object:
    """The first element a person would call `what`: by a field's label or placeholder, or its
    visible text (a button's, a link's); failing those, `what` is a CSS selector."""
    p = page()
    found = [p.get_by_label(what), p.get_by_placeholder(what), p.get_by_text(what)]
    return next((locator.first for locator in found if locator.count()), p.locator(what).first)


def browser_navigate(url: str) -> str:
    """Open a URL in the browser; returns the page's title. Read it with browser_get_text."""
    response = page().goto(url, wait_until="domcontentloaded")
    return f"Opened {page().url} (HTTP {response and response.status}): {page().title()!r}"


def browser_click(selector_or_text: str) -> str:
    """Click an element, found by its visible text (preferred) or a CSS selector."""
    locate(selector_or_text).click(timeout=5000)
    page().wait_for_load_state()
    return f"Clicked {selector_or_text!r}; the page is {page().url}"


def browser_type(selector: str, text: str) -> str:
    """Type text into an input found by its label, placeholder or a CSS selector (replaces its value)."""
    locate(selector).fill(text, timeout=5000)
    return f"Typed {len(text)} characters into {selector!r}."


def browser_get_text() -> str:
    """The visible text of the current page."""
    return tools.clip(page().inner_text("body"), tools.MAX_READ) or "(the page shows no text)"


def browser_screenshot() -> str:
    """Save a screenshot of the current page in .amas/ (kept out of git); returns its path."""
    path = time.strftime(".amas/screenshot-%Y%m%d-%H%M%S.png")  # it may show secrets: .gitignore'd
    page().screenshot(path=tools.create_own(tools.STATE["root"] / path, ""))
    return f"Screenshot saved to {path}"


tools.register(browser_navigate, browser_click, browser_type, browser_get_text, browser_screenshot)
