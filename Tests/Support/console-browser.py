#!/usr/bin/env python3
"""Drives `thumbd console` in a real Chromium (Debian's, through Playwright) against a real worker and
PostgreSQL, as an operator would; ConsoleBrowserTests starts them all and runs this.

    console-browser.py --console URL --password PW --database URL --origin URL --origin-root DIR
                       --photo JPEG [--screenshots DIR]

Each check prints one line `ok NAME` or `FAILED NAME: why` and the script stops at the first failure
(exit 1). Jobs are enqueued and checked with psql. The pages are never reloaded where a check says
"live": a marker set on the window before the action must still be there after it.
"""

import argparse
import json
import shutil
import subprocess
import sys
import time

from playwright.sync_api import sync_playwright

args = None
checks = []


def psql(sql, *values):
    command = ["psql", args.database, "-XAtq", "-v", "ON_ERROR_STOP=1"]
    for index, value in enumerate(values, 1):
        command += ["-v", f"p{index}={value}"]
    result = subprocess.run(command, input=sql, capture_output=True, text=True, check=True)
    return result.stdout.strip()


def enqueue(source, external_id, metadata="{}"):
    return int(psql("SELECT thumbs.enqueue(:'p1', 'default', 0, now(), :'p2'::jsonb, :'p3')",
                    source, metadata, external_id))


def check(name, condition, why=""):
    if condition:
        print(f"ok {name}", flush=True)
        checks.append(name)
        return
    print(f"FAILED {name}: {why}", flush=True)
    sys.exit(1)


def wait_for(predicate, timeout=30.0, interval=0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    return predicate()


def shot(page, name):
    if args.screenshots:
        page.screenshot(path=f"{args.screenshots}/{name}.png", full_page=True)


def mark(page):
    page.evaluate("window.__stayed = 'yes'")


def stayed(page):
    return page.evaluate("window.__stayed") == "yes"


def main():
    global args
    parser = argparse.ArgumentParser()
    for name in ["console", "password", "database", "origin", "origin-root", "photo"]:
        parser.add_argument(f"--{name}", required=True)
    parser.add_argument("--screenshots")
    args = parser.parse_args()
    base = args.console.rstrip("/")
    hostile = "<script>window.__pwned=1</script>"
    # Names of this run's own, so that the script can run again on the same database.
    run = str(int(time.time() * 1000))
    photo_id = f"photo-{run}"

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        dialogs = []
        page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))

        # Without a session every page sends the browser to the login.
        page.goto(base + "/jobs")
        check("a page without a session goes to the login", "/login" in page.url, page.url)
        shot(page, "login")

        # A refused login: the form again, saying so, and no session.
        page.fill("input[name=password]", args.password + "-wrong")
        with page.expect_response(lambda r: r.url.endswith("/login") and r.request.method == "POST") as answer:
            page.click("button[type=submit]")
        check("a wrong password is refused", answer.value.status == 401 and
              "not right" in page.inner_text("body"), f"status {answer.value.status}")
        page.goto(base + "/")
        check("no session after a refused login", "/login" in page.url, page.url)

        # The right password right after the wrong one logs in.
        page.fill("input[name=password]", args.password)
        page.click("button[type=submit]")
        page.wait_for_url(base + "/")
        check("the right password after a wrong one logs in", page.title().startswith("Overview"), page.title())

        # The overview changes while jobs run, without a reload.
        def card(label):
            return int(page.inner_text(f"[data-card='{label}'] .value").replace(",", ""))

        before = card("succeeded, last hour")
        mark(page)
        for n in range(3):
            enqueue(f"{args.origin}/unique/photo.jpg?overview-{run}-{n}", f"overview-{run}-{n}")
        grew = wait_for(lambda: card("succeeded, last hour") >= before + 3, timeout=60)
        check("the overview counts the jobs that succeed, live", grew and stayed(page),
              f"{before} -> {card('succeeded, last hour')}")
        workers = page.inner_text("#workers")
        check("the overview lists the worker as ready", "ready" in workers, workers)
        shot(page, "overview")

        # A job that fails for good: its original is not there (404), its metadata and source URL carry
        # markup, which must show as text.
        missing = f"{args.origin}/files/later-{run}.jpg?tag={hostile}"
        failed = enqueue(missing, photo_id, json.dumps({"caption": hostile, "album": "holidays"}))
        done = wait_for(lambda: psql("SELECT state FROM thumbs.jobs WHERE id = :'p1'", failed) == "failed")
        check("the job with a missing original failed", done,
              psql("SELECT state || ' ' || coalesce(error_code, '') FROM thumbs.jobs WHERE id = :'p1'", failed))

        # Found by its external id through the filter form.
        page.goto(base + "/jobs")
        page.fill("input[name=external_id]", photo_id)
        page.click("form.filters button[type=submit]")
        rows = page.locator("tbody tr")
        check("the filter by external id finds the job", rows.count() == 1 and
              page.inner_text("tbody tr td:nth-child(1)") == str(failed), page.inner_text("tbody"))
        # The list shortens a long URL in the middle: its end is shown.
        check("a source URL with markup shows as text in the list", hostile[-20:] in page.inner_text("tbody"),
              page.inner_text("tbody"))
        shot(page, "jobs")
        page.click(f"tbody a[href='/jobs/{failed}']")
        page.wait_for_url(f"{base}/jobs/{failed}")
        check("the job's page shows its state", page.inner_text("[data-field=state]") == "failed",
              page.inner_text("[data-field=state]"))
        check("the job's page shows its error code", page.inner_text("[data-field=error_code]") == "not_found",
              page.inner_text("[data-field=error_code]"))
        body = page.inner_text("body")
        check("metadata with markup shows as text", hostile in body and "holidays" in body, "")
        check("a source URL with markup shows as text", missing in body, "")
        check("no markup from the data ran", page.evaluate("window.__pwned") is None and not dialogs
              and page.locator("script").count() == 1, f"{page.locator('script').count()} scripts, {dialogs}")
        shot(page, "job-failed")

        # Retry, once the original is there: the page follows the job to success without a reload,
        # and shows every variant as an image that loaded.
        shutil.copyfile(args.photo, f"{args.origin_root}/later-{run}.jpg")
        mark(page)
        page.click("button:text-is('Retry')")
        succeeded = wait_for(lambda: page.inner_text("[data-field=state]") == "succeeded", timeout=60)
        check("Retry: the job succeeds on the page, live", succeeded and stayed(page),
              page.inner_text("[data-field=state]"))
        check("the error code is gone once it succeeded", page.inner_text("[data-field=error_code]") == "",
              page.inner_text("[data-field=error_code]"))
        expected = int(psql("SELECT count(*) FROM thumbs.variants WHERE job_id = :'p1'", failed))
        images = page.locator("#job-variants img")
        wait_for(lambda: page.evaluate(
            "[...document.querySelectorAll('#job-variants img')].every(i => i.complete && i.naturalWidth > 0)"))
        loaded = page.evaluate(
            "[...document.querySelectorAll('#job-variants img')]"
            ".filter(i => i.complete && i.naturalWidth > 0 && i.loading !== 'lazy').length")
        check("every variant is shown as an image", expected > 0 and images.count() == expected
              and loaded == expected, f"{loaded} loaded of {images.count()}, {expected} variants")
        sources = page.evaluate("[...document.querySelectorAll('#job-variants img')].map(i => i.src)")
        check("the images come from the console, not the storage",
              all(s.startswith(base + f"/jobs/{failed}/variants/") for s in sources), str(sources))
        shot(page, "job")

        # A POST without its token: 403, and nothing changed.
        queued = enqueue(f"{args.origin}/slow/photo.jpg?chunk=512&delay=0.5&run={run}", f"slow-{run}")
        answer = page.request.post(f"{base}/jobs/{queued}/cancel", form={"confirm": "yes"})
        state = psql("SELECT state FROM thumbs.jobs WHERE id = :'p1'", queued)
        check("a POST without its token is refused (403) and changes nothing",
              answer.status == 403 and state in ("queued", "running"), f"{answer.status}, {state}")
        answer = page.request.post(f"{base}/jobs/{queued}/cancel", form={"csrf": "0" * 64})
        state = psql("SELECT state FROM thumbs.jobs WHERE id = :'p1'", queued)
        check("a POST with a wrong token is refused (403) and changes nothing",
              answer.status == 403 and state in ("queued", "running"), f"{answer.status}, {state}")

        # Forget, after the confirmation that names the photo.
        page.goto(f"{base}/jobs/{failed}")
        page.click("button:text-is('Forget')")
        page.wait_for_url(f"**/jobs/{failed}/forget*")
        confirmation = page.inner_text("main")
        check("Forget asks first, naming the photo", photo_id in confirmation and "profile" in confirmation,
              confirmation)
        shot(page, "forget")
        page.click("main button:text-is('Forget')")
        page.wait_for_url(f"{base}/jobs/{failed}?notice=forgotten")
        check("the job is forgotten once confirmed", page.inner_text("[data-field=state]") == "forgotten"
              and psql("SELECT state FROM thumbs.jobs WHERE id = :'p1'", failed) == "forgotten",
              page.inner_text("[data-field=state]"))

        # Workers and profiles.
        page.goto(base + "/workers")
        check("the workers page lists the worker", page.locator("#workers tbody tr").count() >= 1, "")
        shot(page, "workers")
        page.goto(base + "/profiles")
        page.fill("#spec", '{"variants": [{"name": "small", "width": 0}]}')
        page.wait_for_selector("#check.refused", timeout=10000)
        check("a spec with a problem is refused as it is typed", "width" in page.inner_text("#check"),
              page.inner_text("#check"))
        page.fill("#spec", '{"variants": [{"name": "card", "width": 800, "height": 600, "fit": "cover"}]}')
        page.wait_for_selector("#check.done", timeout=10000)
        check("a valid spec shows its sizes for a 4032x3024 photo", "800" in page.inner_text("#check")
              and "600" in page.inner_text("#check"), page.inner_text("#check"))
        shot(page, "profiles")
        browser.close()
    print(json.dumps({"checks": len(checks)}))


if __name__ == "__main__":
    main()
