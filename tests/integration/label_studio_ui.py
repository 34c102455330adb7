"""Annotate Label Studio tasks through its web UI: headless system Chromium driven by Playwright.

Run by the Label Studio venv's interpreter (which holds Playwright), not imported by the tests:
``python label_studio_ui.py`` reads ``{"url", "email", "password", "project", "actions": [{"task",
"choice"}]}`` on stdin, logs in, opens each task in the project's data manager, picks the choice,
submits (or updates), and prints the saved annotation ids as one JSON list. Playwright downloads
no browser: the system Chromium is launched by path.
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

    job = json.load(sys.stdin)
    url, saved = job["url"], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.set_default_timeout(TIMEOUT_MS)
        page.goto(url + "/user/login/")
        page.fill("input[name=email]", job["email"])
        page.fill("input[name=password]", job["password"])
        page.click("button[type=submit]")
        page.wait_for_load_state("networkidle")
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
        browser.close()
    print(json.dumps(saved))


if __name__ == "__main__":
    main()
