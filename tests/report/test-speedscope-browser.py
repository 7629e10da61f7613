#!/usr/bin/python3
"""test-speedscope-browser: lagwatch-report's speedscope export opened as
speedscope opens it, in headless Chromium.

  test-speedscope-browser.py TOOL LAG_EXAMPLE CACHE_DIR

speedscope itself (its npm package: the web app and its file-format
schema) is installed with npm into CACHE_DIR at test time, once; nothing of
it is in the source tree. Each export (known records, and the real records
of examples/lag-example) is checked against speedscope's own JSON schema,
then loaded through speedscope's import path for local files (the one its
`speedscope FILE` command uses: index.html#localProfilePath=SCRIPT, the
script handing the file to speedscope.loadFileFromBase64()) in Debian's
Chromium, driven over the DevTools protocol on a pipe. The test reads what
speedscope shows: every profile's name in its toolbar (stepping through
them with its "n" key), a frame's name and file:line in the tooltip of its
flame chart, and the profiles and frames of speedscope's own export of
what it imported (its Export button).

Exit 0 passed, 1 failed, 77 (meson's skip) with one line saying why when
npm or chromium is missing or npm cannot install speedscope.
"""

import base64
import json
import os
import queue
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any, NoReturn

TOOL, LAG_EXAMPLE, CACHE = sys.argv[1:4]
SPEEDSCOPE_VERSION = "1.25.0"
TIMEOUT = 120    # seconds for one condition to hold, on a loaded machine


def skip(reason: str) -> NoReturn:
    print("SKIP: " + reason)
    sys.exit(77)


def install_speedscope() -> str:
    """speedscope's dist/release folder, installed into CACHE by npm."""
    release = os.path.join(CACHE, "node_modules", "speedscope", "dist", "release")
    package = os.path.join(CACHE, "node_modules", "speedscope", "package.json")
    try:
        with open(package) as f:
            installed = json.load(f).get("version")
    except (OSError, ValueError):
        installed = None
    if installed != SPEEDSCOPE_VERSION:
        os.makedirs(CACHE, exist_ok=True)
        done = subprocess.run(["npm", "install", "--prefix", CACHE, "--no-save", "--no-package-lock", "--no-audit",
                               "--no-fund", "--ignore-scripts", "--prefer-offline",
                               "speedscope@" + SPEEDSCOPE_VERSION],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
        if done.returncode != 0 or not os.path.isfile(os.path.join(release, "index.html")):
            lines = done.stdout.decode("utf-8", "replace").strip().splitlines()
            skip("npm could not install speedscope %s: %s" % (SPEEDSCOPE_VERSION, lines[-1] if lines else "?"))
    return release


# Records: cause A from a named GSource with a call tree, cause B from an
# unnamed GSource (named by its callback), without one.
PROGRAM = "/opt/app/bin/editor"
BUILD_ID = "05ad68a60ae4446def2e09dbe427faca909cd846"


def frame(symbol: str, offset: int, file: str | None = None, line: int | None = None,
          module: str = PROGRAM) -> dict[str, Any]:
    return {"ip": "0x%x" % (0x7f0000000000 + offset), "module": module, "build_id": BUILD_ID,
            "module_offset": "0x%x" % offset, "symbol": symbol, "symbol_offset": 4, "file": file, "line": line,
            "inlined": False, "is_program": module == PROGRAM}


def stack(name: str) -> list[dict[str, Any]]:
    libc = "/lib/x86_64-linux-gnu/libc.so.6"
    glib = "/lib/x86_64-linux-gnu/libglib-2.0.so.0"
    return [frame("clock_nanosleep", 0xcf545, module=libc),
            frame(name + "_leaf", 0x1300, "/src/editor/%s.c" % name, 20),
            frame(name + "_handler", 0x1380, "/src/editor/%s.c" % name, 40),
            frame("g_main_context_dispatch", 0x5465f, module=glib),
            frame("main", 0x11b2, "/src/editor/main.c", 85)]


def record(fingerprint: str, lag_id: str, duration: float, when: str, frames: list[dict[str, Any]],
           **extra: Any) -> dict[str, Any]:
    result = {"event": "lag", "id": lag_id, "time": when, "duration_ms": duration, "threshold_ms": 100,
              "complete": True, "pid": 100, "thread_id": 100, "thread_name": "editor", "caught_ms": 100.0,
              "source": "autosave", "priority": 0, "phase": "dispatch", "cpu_ms": 1.0, "thread_state": "sleeping",
              "syscall": None, "wchan": None, "fingerprint": fingerprint, "fingerprint2": fingerprint,
              "occurrence": 1, "samples": 20, "stack_method": "proc", "stack_error": None, "stack_truncated": False,
              "stack": frames, "stacks": [{"samples": 20, "truncated": False, "stack": frames}],
              "stack_end": "outermost", "run_delay_ms": None, "cpu_starved": False, "input_pending": False}
    result.update(extra)
    return result


def known_records() -> list[dict[str, Any]]:
    calls = [{"name": "save_handler", "start_ms": 95.0, "duration_ms": 205.0, "samples": 20, "children": [
        {"name": "save_leaf", "start_ms": 100.0, "duration_ms": 150.0, "samples": 15, "children": []}]}]
    return [record("aaaaaaaaaaaaaaaa", "100-1", 300.0, "2026-11-21T10:00:00.000Z", stack("save"),
                   calls=calls, calls_exact=False, calls_samples=20),
            record("bbbbbbbbbbbbbbbb", "100-2", 200.0, "2026-11-21T10:00:01.000Z", stack("draw"), source=None,
                   source_callback="on_draw_idle", source_callback_kind="idle")]


EXPECTED_NAMES = [
    "save_leaf \u2190 save_handler (save.c:20) [aaaaaaaaaaaaaaaa]: 1 lags, 300.0 ms",
    'editor: 300.0 ms lag in GSource "autosave", 2026-11-21 10:00:00.000 (id 100-1)',
    "draw_leaf \u2190 draw_handler (draw.c:20) [bbbbbbbbbbbbbbbb]: 1 lags, 200.0 ms",
    "editor: 200.0 ms lag in callback on_draw_idle (unnamed GSource), 2026-11-21 10:00:01.000 (id 100-2) "
    "(its stacks, not in time order: no call tree)",
]


class Browser:
    """Chromium over the DevTools protocol on a pipe (--remote-debugging-pipe:
    it reads commands on its fd 3 and answers on its fd 4, each message
    JSON ending in a NUL byte), with one page."""

    def __init__(self, chromium: str, home: str) -> None:
        to_browser_r, self.to_browser = os.pipe()
        self.from_browser, from_browser_w = os.pipe()
        arguments = [chromium, "--headless", "--no-sandbox", "--remote-debugging-pipe",
                     "--user-data-dir=" + os.path.join(home, "profile"), "--no-first-run", "--disable-extensions",
                     "--enable-unsafe-swiftshader", "--use-angle=swiftshader", "--window-size=1280,900",
                     "about:blank"]
        self.process = subprocess.Popen(["sh", "-c", 'exec "$0" "$@" 3<&%d 4>&%d' % (to_browser_r, from_browser_w)]
                                        + arguments, pass_fds=(to_browser_r, from_browser_w),
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                        env=dict(os.environ, HOME=home))
        os.close(to_browser_r)
        os.close(from_browser_w)
        self.messages: "queue.Queue[dict[str, Any] | None]" = queue.Queue()
        self.events: list[dict[str, Any]] = []
        self.next_id = 0
        threading.Thread(target=self.read, daemon=True).start()
        threading.Thread(target=self.drain_stderr, daemon=True).start()
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime"):
            self.call(domain + ".enable", session=True)

    def drain_stderr(self) -> None:
        assert self.process.stderr is not None
        for _ in self.process.stderr:
            pass

    def read(self) -> None:
        buffered = b""
        while True:
            chunk = os.read(self.from_browser, 1 << 16)
            if not chunk:
                self.messages.put(None)
                return
            buffered += chunk
            while b"\0" in buffered:
                message, buffered = buffered.split(b"\0", 1)
                self.messages.put(json.loads(message))

    def call(self, method: str, params: dict[str, Any] | None = None, session: bool = False) -> dict[str, Any]:
        self.next_id += 1
        number = self.next_id
        command: dict[str, Any] = {"id": number, "method": method, "params": params or {}}
        if session:
            command["sessionId"] = self.session
        os.write(self.to_browser, json.dumps(command).encode() + b"\0")
        deadline = time.monotonic() + TIMEOUT
        while True:
            message = self.messages.get(timeout=max(deadline - time.monotonic(), 0.1))
            if message is None:
                raise AssertionError("chromium went away during %s" % method)
            if message.get("id") == number:
                if "error" in message:
                    raise AssertionError("%s: %s" % (method, message["error"]))
                result: dict[str, Any] = message.get("result", {})
                return result
            self.events.append(message)
            if message.get("method") == "Page.javascriptDialogOpening":
                # speedscope says an import failed with alert(), which
                # blocks the page: dismissed (dialogs() keeps what it said),
                # its answer not awaited.
                self.next_id += 1
                os.write(self.to_browser, json.dumps({"id": self.next_id, "sessionId": self.session,
                                                      "method": "Page.handleJavaScriptDialog",
                                                      "params": {"accept": True}}).encode() + b"\0")

    def evaluate(self, expression: str) -> Any:
        answer = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": True}, session=True)
        if "exceptionDetails" in answer:
            raise AssertionError("%s: %s" % (expression, answer["exceptionDetails"]))
        return answer["result"].get("value")

    def dialogs(self) -> list[str]:
        return [e["params"]["message"] for e in self.events if e.get("method") == "Page.javascriptDialogOpening"]

    def console(self) -> list[str]:
        """What the page said on its console (speedscope logs why an import
        failed there), and its uncaught exceptions."""
        said = []
        for e in self.events:
            if e.get("method") == "Runtime.consoleAPICalled":
                said.append(" ".join(str(a.get("value", a.get("description", ""))) for a in e["params"]["args"]))
            elif e.get("method") == "Runtime.exceptionThrown":
                said.append(str(e["params"]["exceptionDetails"].get("exception", {}).get("description")))
        return said

    def wait_for(self, what: str, expression: str) -> Any:
        """The value of EXPRESSION once it is truthy; AssertionError after
        TIMEOUT, or at once when speedscope put up an alert."""
        deadline = time.monotonic() + TIMEOUT
        while True:
            # (Before the page has loaded, it has no body yet.)
            value = self.evaluate("(() => { try { return %s } catch (e) { return null } })()" % expression)
            if value:
                return value
            if self.dialogs():
                raise AssertionError("speedscope said: %s (waiting for %s)" % (self.dialogs(), what))
            if self.evaluate("!!document.body && document.body.innerText.includes('Something went wrong')"):
                raise AssertionError("speedscope failed to import (waiting for %s); its console:\n%s"
                                     % (what, "\n".join(self.console())))
            if time.monotonic() > deadline:
                raise AssertionError("no %s after %d s; the page shows:\n%s"
                                     % (what, TIMEOUT, self.evaluate("document.body.innerText")))
            time.sleep(0.2)

    def close(self) -> None:
        try:
            self.call("Browser.close")
        except (AssertionError, OSError, queue.Empty):
            pass
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


failures = 0


def check(condition: bool, what: str) -> None:
    global failures
    if condition:
        print("ok: " + what.splitlines()[0])
    else:
        failures += 1
        print("FAILED: " + what)


def validate(schema: dict[str, Any], document: dict[str, Any], what: str) -> None:
    import jsonschema
    validator = jsonschema.validators.validator_for(schema)(schema)
    errors = sorted(validator.iter_errors(document), key=lambda e: list(e.path))
    check(not errors, "%s is valid against speedscope's file-format schema%s"
          % (what, "".join("\n  %s: %s" % (list(e.path), e.message) for e in errors[:5])))


def open_in_speedscope(browser: Browser, release: str, export: str, tmp: str) -> None:
    """EXPORT through speedscope's import path for local files."""
    script = os.path.join(tmp, os.path.basename(export) + ".js")
    with open(export, "rb") as f:
        content = base64.b64encode(f.read()).decode()
    with open(script, "w") as f:
        f.write("speedscope.loadFileFromBase64(%s, %s)" % (json.dumps(os.path.basename(export)), json.dumps(content)))
    browser.call("Page.navigate", {"url": "about:blank"}, session=True)
    browser.call("Page.navigate", {"url": "file://%s/index.html#localProfilePath=%s" % (release, script)},
                 session=True)


def toolbar_names(browser: Browser, count: int) -> list[str]:
    """The profile names speedscope's toolbar shows, "name (i/count)",
    stepping to the next profile with its "n" key."""
    names = []
    for i in range(1, count + 1):
        if i > 1:
            browser.evaluate("window.dispatchEvent(new KeyboardEvent('keypress', {key: 'n'})), true")
        suffix = " (%d/%d)" % (i, count)
        text = browser.wait_for("profile %d in the toolbar" % i,
                                "[...document.querySelectorAll('span')].map(s => s.innerText)"
                                ".find(t => t.endsWith(%s)) || ''" % json.dumps(suffix))
        names.append(text[:-len(suffix)])
    return names


def show_profile(browser: Browser, index: int, count: int) -> None:
    """Steps to profile INDEX (from 1) with speedscope's "n" and "p" keys."""
    for _ in range(count):
        shown = int(browser.wait_for("a profile's index", "(document.body.innerText.match(/ \\((\\d+)\\/%d\\)\\n/)"
                                     " || [])[1]" % count))
        if shown == index:
            return
        browser.evaluate("window.dispatchEvent(new KeyboardEvent('keypress', {key: '%s'})), true"
                         % ("n" if shown < index else "p"))
        browser.wait_for("profile %d" % (shown + (1 if shown < index else -1)),
                         "document.body.innerText.includes(' (%d/%d)')" % (shown + (1 if shown < index else -1), count))
    raise AssertionError("profile %d of %d not shown" % (index, count))


def hovered_frames(browser: Browser) -> list[str]:
    """The tooltips of the flame chart along a vertical line through its
    middle: the mouse moved over it, each tooltip's text read."""
    seen = []
    width, height = browser.evaluate("[window.innerWidth, window.innerHeight]")
    for y in range(40, min(height, 600), 6):
        browser.call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": width // 2, "y": y}, session=True)
        text = browser.evaluate(
            "[...document.querySelectorAll('div')].filter(d => d.style.left && d.style.top && d.innerText)"
            ".map(d => d.innerText).join('\\n')")
        if text and text not in seen:
            seen.append(text)
    return seen


def exported_by_speedscope(browser: Browser, downloads: str) -> dict[str, Any]:
    """speedscope's own export (its Export button) of what it imported."""
    before = set(os.listdir(downloads))
    browser.evaluate("[...document.querySelectorAll('div')].find(d => d.innerText.trim().endsWith('Export') "
                     "&& d.children.length <= 2).click(), true")
    deadline = time.monotonic() + TIMEOUT
    while True:
        done = [n for n in set(os.listdir(downloads)) - before if n.endswith(".json")]
        if done:
            # (Chromium writes NAME.crdownload, renamed NAME once whole.)
            with open(os.path.join(downloads, done[0])) as f:
                document: dict[str, Any] = json.load(f)
            return document
        if time.monotonic() > deadline:
            raise AssertionError("speedscope's export did not arrive in %s" % downloads)
        time.sleep(0.2)


def check_export(browser: Browser, release: str, schema: dict[str, Any], export: str, tmp: str,
                 expected_names: list[str] | None, what: str) -> None:
    with open(export) as f:
        document = json.load(f)
    validate(schema, document, what)
    names = [p["name"] for p in document["profiles"]]
    if expected_names is not None:
        check(names == expected_names, "%s: the profiles lagwatch-report wrote: %r" % (what, names))
    open_in_speedscope(browser, release, export, tmp)
    shown = toolbar_names(browser, len(names))
    check(shown == names, "%s: speedscope's toolbar shows every profile's name\n  shown: %r\n  written: %r"
          % (what, shown, names))
    check(not browser.dialogs(), "%s: speedscope raised no alert: %r" % (what, browser.dialogs()))
    downloads = os.path.join(tmp, "downloads-" + os.path.basename(export))
    os.makedirs(downloads)
    browser.call("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": downloads})
    imported = exported_by_speedscope(browser, downloads)
    check([p["name"] for p in imported["profiles"]] == names,
          "%s: speedscope imported every profile: %r" % (what, [p["name"] for p in imported["profiles"]]))
    # (speedscope writes every profile as evented, whatever it read.)
    check([p["unit"] for p in imported["profiles"]] == [p["unit"] for p in document["profiles"]],
          "%s: in the units written: %r" % (what, [p["unit"] for p in imported["profiles"]]))
    placed = sorted({(f["name"], f.get("file"), f.get("line")) for f in imported["shared"]["frames"] if "file" in f})
    written = sorted({(f["name"], f.get("file"), f.get("line")) for f in document["shared"]["frames"] if "file" in f})
    # (Records of a build without libdw have no file:line: nothing to keep
    # then; the known records always have some.)
    check(placed == written and (bool(placed) or not written),
          "%s: speedscope's frames keep their file and line: %r" % (what, placed))
    if not written:
        print("# %s: no frame has a file and line (a build without libdw)" % what)


def check_tooltips(browser: Browser) -> None:
    """The lag's own profile (time order): its calls' tooltips name the
    function and its file:line."""
    show_profile(browser, 2, len(EXPECTED_NAMES))
    browser.wait_for("lag 100-1's profile", "document.body.innerText.includes('(id 100-1) (2/4)')")
    tooltips = hovered_frames(browser)
    print("# tooltips: %r" % tooltips)
    check(any(re.search(r"save_handler\n/src/editor/save\.c:40$", t) for t in tooltips)
          and any(re.search(r"save_leaf\n/src/editor/save\.c:20$", t) for t in tooltips),
          "the flame chart's tooltips name the calls and their file:line: %r" % tooltips)


def main() -> int:
    if shutil.which("npm") is None:
        skip("npm is not installed (Debian package npm): speedscope cannot be installed to open the export")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        skip("chromium is not installed (Debian package chromium)")
    try:
        import jsonschema  # noqa: F401
    except ImportError:
        skip("python3-jsonschema is not installed: speedscope's schema cannot be checked")
    release = install_speedscope()
    with open(os.path.join(release, "file-format-schema.json")) as f:
        schema = json.load(f)
    print("# speedscope %s from %s; %s" % (SPEEDSCOPE_VERSION, release, chromium), flush=True)
    with tempfile.TemporaryDirectory(prefix="lw-speedscope-") as tmp:
        known = os.path.join(tmp, "known.jsonl")
        with open(known, "w") as f:
            f.writelines(json.dumps(r) + "\n" for r in known_records())
        real = os.path.join(tmp, "real.jsonl")
        subprocess.run([LAG_EXAMPLE], env=dict(os.environ, LAGWATCH_OUTPUT="json:" + real),
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120, check=True)
        exports = []
        for name, source in (("known", known), ("real", real)):
            export = os.path.join(tmp, name + ".speedscope.json")
            subprocess.run([TOOL, "--format", "speedscope", "-o", export, source], check=True, timeout=300)
            exports.append((name, export))
        browser = Browser(chromium, tmp)
        try:
            for name, export in exports:
                try:
                    check_export(browser, release, schema, export, tmp,
                                 EXPECTED_NAMES if name == "known" else None, name + " records")
                    if name == "known":
                        check_tooltips(browser)
                except AssertionError as error:
                    check(False, "%s records: %s" % (name, error))
        finally:
            browser.close()
    print("%d failed" % failures if failures else "all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
