"""search_google, fetch_url, the browser tools in real headless Chromium, and the macOS tools with a
fake osascript: everything against servers on 127.0.0.1."""

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from conftest import amas
from fake_llm import text, tool

from amas_code import browser, mac, tools  # noqa: F401 (browser registers its tools)

FORM = """<html><head><title>Greeter</title><style>body{color:red}</style></head><body>
<h1>Greeter</h1><label for="n">Your name</label><input id="n">
<button onclick="document.getElementById('out').textContent = 'Hello, ' +
  document.getElementById('n').value + '!'">Send</button><div id="out"></div></body></html>"""
PAGES = {
    "/page.html": (
        "text/html; charset=utf-8",
        b"<html><head><script>var secret = 1;</script>"
        b"<style>p { color: red }</style></head><body><h1>Title</h1><p>Some <b>bold</b> text"
        b"</p><ul><li>one</li></ul></body></html>",
    ),
    "/data.json": ("application/json", b'{"answer": 42}'),
    "/logo.png": ("image/png", b"\x89PNG\r\n\x1a\n" + bytes(500)),
    "/form.html": ("text/html", FORM.encode()),
    "/huge.txt": ("text/plain", b"line of text\n" * 400_000),
}


class Site(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.path == "/old":
            self.send_response(301)
            self.send_header("Location", "/page.html")
            self.send_header("Content-Length", "0")
            return self.end_headers()
        if self.path == "/slow":
            time.sleep(3)
        kind, body = PAGES.get(self.path, ("text/plain", b"not here"))
        self.send_response(200 if self.path in PAGES else 404)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):  # fetch_url stops reading at its size cap
            pass


@pytest.fixture(scope="module")
def site():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Site)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


def test_fetch_url_turns_html_into_markdown_without_scripts_or_styles(site):
    page = tools.run("fetch_url", {"url": f"{site}/page.html"})
    assert "# Title" in page and "Some **bold** text" in page and "* one" in page
    assert "secret" not in page and "color" not in page


def test_fetch_url_json_redirect_binary_and_404(site):
    assert tools.run("fetch_url", {"url": f"{site}/data.json"}) == '{"answer": 42}'
    assert "# Title" in tools.run("fetch_url", {"url": f"{site}/old"})
    binary = tools.run("fetch_url", {"url": f"{site}/logo.png"})
    assert binary == f"{site}/logo.png: 508 bytes of image/png content; not shown."
    missing = tools.run("fetch_url", {"url": f"{site}/nope"})
    assert missing.startswith("Error: ") and "404 Not Found" in missing and "\n" not in missing


def test_fetch_url_timeout_huge_body_and_unreachable_hosts_are_one_line(site):
    tools.STATE["config"]["web_timeout"] = 1
    slow = tools.run("fetch_url", {"url": f"{site}/slow"})
    assert slow == f"Error: {site}/slow: timed out"
    huge = tools.run("fetch_url", {"url": f"{site}/huge.txt"})
    assert len(huge) < 60_000 and "characters cut" in huge  # 5 MB body: read 2 MB, show 50 KB
    for url in ("http://127.0.0.1:1/", "http://no-such-host.invalid/", "not a url"):
        result = tools.run("fetch_url", {"url": url})
        assert result.startswith("Error: ") and "\n" not in result, result


def test_search_google_without_network_fails_in_one_line():
    tools.STATE["config"]["web_timeout"] = 3
    result = tools.run("search_google", {"query": "python asyncio best practices"})
    assert result.startswith("Error: ") and "www.google.com" in result and "\n" not in result


needs_chromium = pytest.mark.skipif(
    not any(map(shutil.which, ("chromium", "google-chrome"))), reason="no Chromium installed"
)


@needs_chromium
def test_browser_fills_a_form_clicks_and_reads_the_answer(site, isolated):
    assert "'Greeter'" in tools.run("browser_navigate", {"url": f"{site}/form.html"})
    assert "Typed 3 characters" in tools.run(
        "browser_type", {"selector": "Your name", "text": "Ada"}
    )
    assert "Clicked 'Send'" in tools.run("browser_click", {"selector_or_text": "Send"})
    assert "Hello, Ada!" in tools.run("browser_get_text", {})
    shot = tools.run("browser_screenshot", {}).removeprefix("Screenshot saved to ")
    assert (
        shot.startswith(".amas/screenshot-") and Path(shot).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    )
    assert Path(".amas/.gitignore").read_text() == "*\n"  # a screenshot may show secrets
    missing = tools.run("browser_click", {"selector_or_text": "#no-such-button"})
    assert missing.startswith("Error: ") and "\n" not in missing


@needs_chromium
def test_the_repl_prompt_still_works_once_the_browser_runs(site, config, capsys):
    from conftest import terminal

    from amas_code.agent import Agent

    tools.run("browser_navigate", {"url": f"{site}/form.html"})  # playwright keeps an event loop
    with terminal("/help", "/quit"):
        Agent(config).repl()
    assert "/undo" in capsys.readouterr().err


def test_a_task_without_the_browser_never_imports_playwright(llm, isolated):
    llm.queue(tool("fetch_url", {"url": "http://127.0.0.1:1/"}), text("done"))
    script = (
        "import sys; from amas_code.agent import Agent; from amas_code.config import DEFAULT_CONFIG\n"
        f"Agent({{**DEFAULT_CONFIG, 'model': 'openai/f', 'api_key': 'k', 'api_base': {llm.url!r}}})"
        ".turn('fetch it')\nprint('playwright loaded:', 'playwright' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert "playwright loaded: False" in done.stdout, done.stderr
    assert len(llm.requests) == 2  # the tool ran and its result went back


def test_mac_tools_are_not_offered_off_macos(llm, config):
    from amas_code.agent import Agent

    llm.queue(text("ok"))
    Agent(config).turn("hi")
    offered = {t["function"]["name"] for t in llm.requests[0]["body"]["tools"]}
    assert {"fetch_url", "search_google", "browser_navigate", "browser_click"} <= offered
    assert sys.platform == "darwin" or not offered & {"applescript"}


HOSTILE = 'He said "hi" \\ then\n"; do shell script "rm -rf ~" -- 🎉'


@pytest.fixture
def fake_osascript(tmp_path, monkeypatch):
    """An `osascript` first on PATH that records its argv and prints what a real one would."""
    log = tmp_path / "argv.json"
    script = tmp_path / "bin" / "osascript"
    script.parent.mkdir()
    script.write_text(
        f"#!{sys.executable}\nimport json, sys\n"
        f"open({str(log)!r}, 'a').write(json.dumps(sys.argv[1:]) + '\\n')\n"
        "print('clip text' if sys.argv[2] == 'the clipboard as text' else '')\n"
    )
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{script.parent}{os.pathsep}{os.environ['PATH']}")
    return lambda: [json.loads(line) for line in log.read_text().splitlines()]


def test_mac_tools_pass_user_text_as_argv_never_as_source(fake_osascript):
    tools.STATE["config"].update(auto_accept=True, yolo=True)  # applescript asks, unless --yolo
    notify = 'on run argv\ndisplay notification (item 1 of argv) with title "Amas"\nend run'
    set_clipboard = "on run argv\nset the clipboard to (item 1 of argv)\nend run"
    assert mac.applescript(script=notify, text=HOSTILE) == tools.WORDS["empty"]
    assert mac.applescript(script=set_clipboard, text=HOSTILE) == tools.WORDS["empty"]
    assert mac.applescript(script="the clipboard as text") == "clip text"
    notified, set_clip, get_clip = fake_osascript()
    assert notified == ["-e", notify, HOSTILE]
    assert set_clip == ["-e", set_clipboard, HOSTILE]
    assert get_clip == ["-e", "the clipboard as text"]


def test_a_failing_applescript_is_reported_in_one_line(fake_osascript, tmp_path):
    tools.STATE["config"].update(auto_accept=True, yolo=True)
    (tmp_path / "bin" / "osascript").write_text(
        "#!/bin/sh\necho 'syntax error: nope' >&2\nexit 1\n"
    )
    with pytest.raises(tools.ToolError, match="^osascript failed: syntax error: nope$"):
        mac.applescript(script="x")


def test_applescript_asks_first_unless_yolo(fake_osascript):
    tools.STATE["config"].update(auto_accept=True)
    assert mac.applescript(script="beep") == "The user declined to run this AppleScript."
    tools.STATE["config"].update(yolo=True)
    assert mac.applescript(script="beep") == tools.WORDS["empty"]
    assert fake_osascript() == [["-e", "beep"]]


def test_amas_help_still_starts_without_heavy_imports():
    done = amas("--help")
    assert done.returncode == 0 and "amas init" in done.stdout
