#!/usr/bin/env python3
"""Drive the annotation app (`hierarag annotate serve`) as two annotators in headless Chromium
and report what happened, as JSON.

Usage:
    annotate_flow.py BASE_URL TOKEN_A TOKEN_B [--screenshot OUT.png]

BASE_URL is the running server (http://127.0.0.1:PORT); the store behind it must have at
least three items, the first (position 0) with a category task and a document containing
`<script>`, the second (position 1) without a category task. Annotator A (one browser context)
opens the resume link, checks that the hostile document renders as text, rates item 0 by
clicking (with a note) and saves; annotator B (a second context) rates item 0 differently by
clicking and saves & next; A moves on with `j`, rates item 1 with the keyboard shortcuts
(typing in the note must not trigger them), saves & next with Enter and comes back with `k`.
Both then reload their items, and the radios checked after each reload are reported. Prints ONE JSON object to stdout:

    {"a": {"resume_url": ..., "item0_checked": [...], "item0_note": ..., "item1_checked": [...],
           "item1_note": ..., "after_enter_url": ..., "after_k_url": ..., "progress": ...,
           "hostile": {"title_before": ..., "title_after": ..., "text": ...,
                       "script_or_img_in_document": 0}},
     "b": {"resume_url": ..., "after_save_next_url": ..., "item0_checked": [...], "progress": ...},
     "dialogs": [], "console_errors": [], "page_errors": [], "requests_outside": []}

Exit status: 0 when the flow ran (the caller judges the JSON), 1 when a step failed (an element
never appeared, a navigation failed), 2 when the browser could not start (or Playwright is not
installed), 3 when /usr/bin/chromium is missing. Messages go to stderr.

Needs the `playwright` package (pinned in scripts/oracles/requirements.txt) and Debian's
`chromium` (installed by .ci/run); it never downloads a browser (`playwright install`).
"""

import argparse
import json
import os
import pathlib
import sys

# The browser and its flags are check_page.py's (no connections of Chromium's own).
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from check_page import CHROMIUM, CHROMIUM_ARGS  # noqa: E402

LOCAL_SCHEMES = ("data:", "blob:", "about:")
ACTION_TIMEOUT_MS = 10_000
CHECKED = "els => els.map(e => e.id)"


def fail(status, message):
    print(f"annotate_flow.py: {message}", file=sys.stderr)
    sys.exit(status)


def checked_radios(page):
    return page.eval_on_selector_all("input[type=radio]:checked", CHECKED)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("base", help="the server, e.g. http://127.0.0.1:8765")
    parser.add_argument("token_a", help="annotator A's token")
    parser.add_argument("token_b", help="annotator B's token")
    parser.add_argument("--screenshot", type=pathlib.Path, help="write a PNG of A's item 1 (keyboard-rated) here")
    args = parser.parse_args()
    base = args.base.rstrip("/")

    if not os.path.exists(CHROMIUM):
        fail(3, "chromium not installed: apt-get install chromium")
    try:
        from playwright.sync_api import Error, sync_playwright
    except ImportError:
        fail(2, "playwright not installed: pip install -r scripts/oracles/requirements.txt")

    report = {"a": {}, "b": {}, "dialogs": [], "console_errors": [], "page_errors": [],
              "requests_outside": []}

    def watch(page, who):
        def on_console(message):
            if message.type in ("error", "warning"):
                report["console_errors"].append(f"{who}: {message.type}: {message.text}")

        def on_dialog(dialog):
            report["dialogs"].append(f"{who}: {dialog.type}: {dialog.message}")
            dialog.dismiss()

        def on_route(route):
            url = route.request.url
            if url == base or url.startswith(base + "/") or url.startswith(LOCAL_SCHEMES):
                route.continue_()
            else:
                report["requests_outside"].append(url)
                route.abort("blockedbyclient")

        page.on("console", on_console)
        page.on("dialog", on_dialog)
        page.on("pageerror", lambda error: report["page_errors"].append(f"{who}: {error}"))
        page.route("**/*", on_route)
        page.set_default_timeout(ACTION_TIMEOUT_MS)

    with sync_playwright() as playwright:
        try:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS,
                                                 headless=True)
        except Error as error:
            fail(2, f"chromium could not start: {error}")
        step = "start"
        try:
            context_a = browser.new_context(viewport={"width": 1280, "height": 900})
            context_b = browser.new_context(viewport={"width": 1280, "height": 900})
            page_a = context_a.new_page()
            page_b = context_b.new_page()
            watch(page_a, "A")
            watch(page_b, "B")
            a, b = report["a"], report["b"]
            item = lambda token, position: f"{base}/a/{token}/item/{position}"

            # A: the resume link lands on item 0, whose document tries to run script.
            page_a.goto(f"{base}/a/{args.token_a}", wait_until="load")
            a["resume_url"] = page_a.url
            hostile = {"title_before": page_a.title()}
            hostile["text"] = page_a.inner_text("#doc-0")
            hostile["script_or_img_in_document"] = page_a.locator(
                ".doc-text script, .doc-text img").count()

            # A rates item 0 by clicking, with a note, and saves (stays on the item).
            page_a.click("label:has(#correctness-3)")
            page_a.click("#hallucination-0")
            page_a.click("#answerability-2")
            page_a.click("#category-1")
            page_a.fill("#note", "A's note <b>not bold</b>")
            step = "A saves item 0"
            with page_a.expect_navigation(wait_until="load"):
                page_a.click("#save")
            a["after_save_url"] = page_a.url
            a["saved_flash"] = page_a.locator("#saved").count()
            hostile["title_after"] = page_a.title()
            a["hostile"] = hostile

            # B, at the same time in its own context: rates item 0 differently, save & next.
            page_b.goto(f"{base}/a/{args.token_b}", wait_until="load")
            b["resume_url"] = page_b.url
            page_b.click("#correctness-1")
            page_b.click("#hallucination-2")
            page_b.click("#answerability-0")
            page_b.click("#category-2")
            step = "B saves & next on item 0"
            with page_b.expect_navigation(wait_until="load"):
                page_b.click("#save-next")
            b["after_save_next_url"] = page_b.url

            # A goes on to item 1 with `j` and rates it with the keyboard.
            step = "A presses j"
            with page_a.expect_navigation(wait_until="load"):
                page_a.keyboard.press("j")
            a["after_j_url"] = page_a.url
            page_a.keyboard.press("2")  # correctness 1
            page_a.keyboard.press("w")  # hallucination 1
            page_a.keyboard.press("D")  # answerability 2 (Caps Lock)
            page_a.click("#note")
            page_a.keyboard.type("typed 1 q a")  # no shortcut may fire while typing
            a["item1_checked_before_save"] = checked_radios(page_a)
            a["dirty_shown"] = page_a.is_visible("#dirty")
            if args.screenshot:
                page_a.screenshot(path=str(args.screenshot), full_page=True)
            page_a.focus("#correctness-1")
            step = "A presses Enter on item 1"
            with page_a.expect_navigation(wait_until="load"):
                page_a.keyboard.press("Enter")  # save & next
            a["after_enter_url"] = page_a.url
            step = "A presses k"
            with page_a.expect_navigation(wait_until="load"):
                page_a.keyboard.press("k")
            a["after_k_url"] = page_a.url

            # Reloads: what each annotator saved is what they see.
            page_a.goto(item(args.token_a, 0), wait_until="load")
            page_a.reload(wait_until="load")
            a["item0_checked"] = checked_radios(page_a)
            a["item0_note"] = page_a.input_value("#note")
            page_a.goto(item(args.token_a, 1), wait_until="load")
            page_a.reload(wait_until="load")
            a["item1_checked"] = checked_radios(page_a)
            a["item1_note"] = page_a.input_value("#note")
            a["progress"] = page_a.inner_text("#progress")
            page_b.goto(item(args.token_b, 0), wait_until="load")
            page_b.reload(wait_until="load")
            b["item0_checked"] = checked_radios(page_b)
            b["progress"] = page_b.inner_text("#progress")
        except (Error, ValueError) as error:
            first_line = str(error).splitlines()[0] if str(error) else repr(error)
            fail(1, f"{first_line} (at or after {step}; so far: {json.dumps(report)})")
        finally:
            browser.close()

    json.dump(report, sys.stdout, ensure_ascii=False)
    print()


if __name__ == "__main__":
    main()
