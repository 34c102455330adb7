"""Annotate Label Studio tasks through its web UI: headless system Chromium driven by Playwright.

Run by the Label Studio venv's interpreter (which holds Playwright), not imported by the tests:
``python label_studio_ui.py`` reads ``{"url", "email", "password"}`` as the first line of stdin and
logs in once; then each line ``{"project", "actions": [{"task", "choice"}]}`` opens each task in the
project's data manager, picks the choice, submits (or updates), and answers with one line: the saved
annotation ids as a JSON list. It ends with stdin. One browser serves a whole test module: launching
Chromium and logging in cost more than annotating a task. Playwright downloads no browser: the system
Chromium is launched by path.
"""

from __future__ import annotations

import json
import os
import re
import sys

CHROMIUM = os.environ.get("ACTIVESTREAM_CHROMIUM", "/usr/bin/chromium")
# Running as root in a container: no sandbox; no GPU, no background traffic, no first-run pages.
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]
TIMEOUT_MS = 60_000


def main() -> None:
    from playwright.sync_api import sync_playwright  # in the Label Studio venv only: the suite collects this file

    login = json.loads(sys.stdin.readline())
    url = login["url"]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.set_default_timeout(TIMEOUT_MS)
        page.goto(url + "/user/login/")
        page.fill("input[name=email]", login["email"])
        page.fill("input[name=password]", login["password"])
        page.click("button[type=submit]")
        page.wait_for_load_state("networkidle")
        print(json.dumps("logged in"), flush=True)
        for line in sys.stdin:
            job, saved = json.loads(line), []
            for action in job["actions"]:
                page.goto(f"{url}/projects/{job['project']}/data?task={action['task']}")
                choice = page.locator(f"input.ant-radio-input[name={json.dumps(action['choice'])}]")
                choice.wait_for(state="visible")
                choice.check()
                button = page.locator("button", has_text=re.compile(r"^\s*(Submit|Update)\s*$")).first
                with page.expect_response(lambda r: "/annotations" in r.url and r.request.method in ("POST", "PATCH")
                                          and r.ok) as response:
                    button.click()
                saved.append(response.value.json()["id"])
            print(json.dumps(saved), flush=True)
        browser.close()


if __name__ == "__main__":
    main()
