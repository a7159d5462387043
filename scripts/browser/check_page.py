#!/usr/bin/env python3
"""Open a local HTML page in headless Chromium and report what went wrong on it, as JSON.

Usage:
    check_page.py PAGE.html [--screenshot OUT.png] [--full-page] [--width 1280] [--height 800]
                  [--count CSS_SELECTOR ...] [--fill SELECTOR=TEXT ...] [--click CSS_SELECTOR ...]

Opens PAGE.html as a file:// URL and waits for the load event, then performs the --fill and
--click actions in the order given (waiting for the load event again after each), counts the
elements matching each --count selector, optionally takes a screenshot, and prints ONE JSON
object to stdout:

    {"console_errors": ["error: ...", "warning: ..."],   # console messages of those two types
     "page_errors": ["TypeError: ..."],                  # uncaught exceptions
     "requests_outside": ["https://..."],                # requests to anything but file:, data:,
                                                         # blob: or about: (blocked, never sent:
                                                         # the page must be self-contained)
     "counts": {"svg.chart": 3},
     "title": "..."}

--fill takes SELECTOR=TEXT, split at the first "=" outside brackets and quotes, so
`input[name=q]=hello` fills `input[name=q]` with "hello".

Exit status: 0 when the page was checked (whatever it reported; the caller judges the JSON),
1 for bad input (a missing page, an invalid selector, an action whose element never appears),
2 when the browser could not start (or Playwright is not installed), 3 when /usr/bin/chromium is
missing. Messages go to stderr.

Needs the `playwright` package (pinned in scripts/oracles/requirements.txt) and Debian's
`chromium` (installed by .ci/run); it never downloads a browser (`playwright install`).
"""

import argparse
import json
import os
import pathlib
import sys

CHROMIUM = "/usr/bin/chromium"
# --disable-background-networking and friends stop Chromium's own connections (updates, sync,
# field trials), which this machine's network refuses and which a hermetic check must not make.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
LOCAL_SCHEMES = ("file:", "data:", "blob:", "about:")
ACTION_TIMEOUT_MS = 10_000


class Action(argparse.Action):
    """Appends (option, value) to args.actions, so --fill and --click keep their order."""

    def __call__(self, parser, namespace, value, option_string=None):
        namespace.actions.append((option_string, value))


def split_fill(spec):
    """Splits SELECTOR=TEXT at the first '=' outside [...] and quotes."""
    depth, quote = 0, None
    for i, c in enumerate(spec):
        if quote:
            quote = None if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c == "[":
            depth += 1
        elif c == "]":
            depth -= 1
        elif c == "=" and depth == 0:
            return spec[:i], spec[i + 1 :]
    raise ValueError(f"--fill {spec!r}: expected SELECTOR=TEXT")


def fail(status, message):
    print(f"check_page.py: {message}", file=sys.stderr)
    sys.exit(status)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("page", type=pathlib.Path, help="the HTML file to open")
    parser.add_argument("--screenshot", type=pathlib.Path, help="write a PNG screenshot here")
    parser.add_argument("--full-page", action="store_true", help="screenshot the whole page")
    parser.add_argument("--width", type=int, default=1280, help="viewport width (default 1280)")
    parser.add_argument("--height", type=int, default=800, help="viewport height (default 800)")
    parser.add_argument("--count", action="append", default=[], metavar="CSS_SELECTOR",
                        help="count the elements matching this selector (repeatable)")
    parser.add_argument("--fill", action=Action, dest="fills", metavar="SELECTOR=TEXT",
                        help="type TEXT into the element (repeatable; in order with --click)")
    parser.add_argument("--click", action=Action, dest="clicks", metavar="CSS_SELECTOR",
                        help="click the element (repeatable; in order with --fill)")
    parser.set_defaults(actions=[])
    args = parser.parse_args()

    if not args.page.is_file():
        fail(1, f"no such page: {args.page}")
    if not os.path.exists(CHROMIUM):
        fail(3, "chromium not installed: apt-get install chromium")
    try:
        from playwright.sync_api import Error, sync_playwright
    except ImportError:
        fail(2, "playwright not installed: pip install -r scripts/oracles/requirements.txt")

    report = {"console_errors": [], "page_errors": [], "requests_outside": [], "counts": {},
              "title": ""}
    with sync_playwright() as playwright:
        try:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS,
                                                 headless=True)
        except Error as error:
            fail(2, f"chromium could not start: {error}")
        try:
            page = browser.new_page(viewport={"width": args.width, "height": args.height})
            page.set_default_timeout(ACTION_TIMEOUT_MS)

            def on_console(message):
                if message.type in ("error", "warning"):
                    where = message.location or {}
                    url, line = where.get("url"), where.get("lineNumber")
                    at = f" ({url}:{line})" if url else ""
                    report["console_errors"].append(f"{message.type}: {message.text}{at}")

            def on_route(route):
                url = route.request.url
                if url.startswith(LOCAL_SCHEMES):
                    route.continue_()
                else:
                    report["requests_outside"].append(url)
                    route.abort("blockedbyclient")

            page.on("console", on_console)
            page.on("pageerror", lambda error: report["page_errors"].append(
                f"{error.name}: {error.message}" if error.name else error.message))
            page.route("**/*", on_route)

            page.goto(args.page.resolve().as_uri(), wait_until="load")
            for option, value in args.actions:
                if option == "--fill":
                    selector, text = split_fill(value)
                    page.fill(selector, text)
                else:
                    page.click(value)
                page.wait_for_load_state("load")
            for selector in args.count:
                report["counts"][selector] = page.locator(selector).count()
            if args.screenshot:
                page.screenshot(path=str(args.screenshot), full_page=args.full_page)
            report["title"] = page.title()
        except (Error, ValueError) as error:
            fail(1, str(error).splitlines()[0] if str(error) else repr(error))
        finally:
            browser.close()

    json.dump(report, sys.stdout, ensure_ascii=False)
    print()


if __name__ == "__main__":
    main()
