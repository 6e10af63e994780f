"""What each user sees and may do: the checks of the page, each given the Browser logged in as
that user."""
import json
import re
import time

from .database import add_sightings, as_user, raise_risk
from .harness import ENCTL, MEMBER, OTHER, PAGE, check, passed, run


def enctl_status(user=None):
    return json.loads(run(ENCTL, "status", "--json", user=user).stdout)


def page_status_fields(browser):
    return browser.evaluate("[...document.querySelectorAll('#status-fields dt')].map(e => e.textContent.trim())")


def enctl_status_fields(user=None):
    """The first column of `enctl status`, without Status (the page's heading shows it)."""
    text = run(ENCTL, "status", user=user).stdout.split("\n\n")[0]
    return [re.split(r"\s{2,}", line.strip())[0] for line in text.splitlines() if line.strip() and line.split()[0] != "Status"]


def member_sees_low_then_increased_risk(browser, database, daemon):
    """Below the alert threshold the page says low risk and nothing says "exposed"; a verdict of
    increased risk turns the card red and brings the reminder."""
    browser.wait("document.getElementById('risk-level').textContent === 'low'", "the risk card to show low risk")
    check(not browser.evaluate("document.getElementById('risk-card').hidden"), "the member sees the risk card")
    check("below your health authority's alert threshold" in browser.evaluate("document.getElementById('risk-advice').textContent"),
          "low risk is shown as encounters below the alert threshold")
    check("exposed" not in browser.evaluate("document.body.innerText"), "nothing on the page says exposed for low risk")
    check(enctl_status(MEMBER).get("risk") == "low" and "recent-exposure" not in enctl_status(MEMBER)["reminders"], "enctl status agrees: low, no reminder")
    browser.screenshot("member-low-risk")
    as_user("enagent", raise_risk, database, int(time.time()))
    daemon.stop()  # enagentd judges its reminders as it starts
    daemon.start()
    browser.wait("document.getElementById('risk-level').textContent === 'increased'", "the risk card to show increased risk")
    check(browser.evaluate("document.getElementById('risk-card').className").endswith("en-risk-increased"), "the card is drawn as increased")
    check(browser.evaluate("document.getElementById('risk-advice').textContent").startswith("Increased risk: you were exposed on"),
          "the card says what the verdict asks")
    browser.wait("document.getElementById('reminders').textContent.startsWith('You were exposed on')", "the reminder of the exposure")
    browser.screenshot("member-increased-risk")
    passed("the page shows low risk without an alarm, then increased risk with its reminder")


def member_sees_and_controls(browser, counts, database):
    browser.open(PAGE)
    browser.wait("!document.getElementById('status-card').hidden && document.getElementById('status-name').textContent === 'active'", "the status")
    check(page_status_fields(browser) == enctl_status_fields(MEMBER), "the member's page shows every field enctl status shows, in its order")
    check(browser.evaluate("document.getElementById('status-meaning').textContent") == "advertising and scanning", "the status says what it means")
    browser.wait("document.querySelectorAll('#sightings-chart rect.en-bar').length > 0", "the sightings chart")
    bars = browser.evaluate("""[...document.querySelectorAll('#sightings-chart rect.en-bar')]
        .map(r => [Number(r.dataset.hour), Number(r.dataset.sightings), Number(r.dataset.identifiers)])""")
    check([bar for bar in bars if bar[1] > 0] == [list(row) for row in counts], f"the chart's {len(counts)} hours are the database's counts per hour")
    check(all(bar[1] == 0 for bar in bars if bar[0] not in {row[0] for row in counts}), "an hour without sightings is drawn as none")
    # What a change of SightingsStored does (the radio's, which this enagentd has none of, sends it):
    # the latest hours asked for again and merged into the chart.
    latest = as_user("enagent", add_sightings, database, 5)
    browser.evaluate("refreshSightings(true)")
    browser.wait(f"document.querySelector('#sightings-chart rect[data-hour=\"{latest[0]}\"]').dataset.sightings === '{latest[1]}'",
                 "the chart to take the latest hour's new sightings")
    bars = browser.evaluate("[...document.querySelectorAll('#sightings-chart rect.en-bar')].filter(r => r.dataset.sightings !== '0').length")
    check(bars == len(counts) + (0 if latest[0] in {row[0] for row in counts} else 1), "the latest hours merged into the chart, the earlier kept")
    browser.wait("document.querySelectorAll('#windows tbody tr').length === 2", "the exposure windows")
    check(browser.evaluate("document.querySelectorAll('#exposure-timeline rect.en-window').length") == 2, "the timeline draws both windows")
    check(browser.evaluate("document.querySelectorAll('#summaries tbody tr').length") == 1, "one daily summary")
    check(browser.evaluate("document.querySelectorAll('#test-results tbody tr').length") == 1, "the positive test")
    browser.screenshot("member")

    browser.evaluate("document.getElementById('pause-for').value = '7200'; document.getElementById('pause').click()")
    browser.wait("document.getElementById('status-name').textContent === 'paused'", "the page to show the pause")
    status = enctl_status()
    check(status["status"] == "paused" and abs(status["pausedUntil"] - time.time() - 7200) < 60, "enctl status follows a pause of 2 hours through the page")
    check(not browser.evaluate("document.getElementById('resume').hidden"), "a paused agent offers Resume")
    browser.screenshot("member-paused")
    browser.evaluate("document.getElementById('resume').click()")
    browser.wait("document.getElementById('status-name').textContent === 'active'", "the page to show the resume")
    check(enctl_status()["status"] == "active", "enctl status follows the resume through the page")
    run(ENCTL, "pause", "30m")
    browser.wait("document.getElementById('status-name').textContent === 'paused'", "the page to follow a pause made elsewhere")
    run(ENCTL, "resume")
    browser.wait("document.getElementById('status-name').textContent === 'active'", "the page to follow a resume made elsewhere")
    passed("the page follows a pause and a resume made with enctl, on the change signals")


def member_shares_with_a_code(browser, publishes):
    browser.evaluate("""document.getElementById('share-code').value = '12345678';
                        document.getElementById('share-agree').checked = true;
                        document.getElementById('share').click()""")
    browser.wait("/\\nShared\\.\\n/.test(document.getElementById('share-output').textContent)", "the share to finish", timeout=60)
    sent = [json.loads(line) for line in open(publishes)]
    check(any(publish.get("keys") and publish.get("status") == 200 for publish in sent), "the key server took the keys that enctl shared for the page")
    browser.wait("[...document.querySelectorAll('#test-results tbody tr')].some(row => row.cells[3].textContent.endsWith('UTC'))", "the shared result")
    check(browser.evaluate("document.querySelectorAll('#test-results tbody tr').length") == 2, "the code's test result is listed beside the other")
    browser.screenshot("member-shared")


def other_user_sees_status_only(browser, secrets):
    browser.open(PAGE)
    browser.wait("!document.getElementById('status-card').hidden && !document.getElementById('health-hidden').hidden", "the status")
    hidden = browser.evaluate("document.getElementById('health-hidden').textContent")
    told = run(ENCTL, "status", user=OTHER).stdout
    check(" ".join(hidden.split()) in " ".join(told.split()), "the page says what more needs the group, as enctl status says it to the same user")
    check(page_status_fields(browser) == enctl_status_fields(OTHER), "the other user's page shows the fields enctl status shows them")
    for card in ("controls", "risk-card", "sightings-card", "exposures-card", "tests-card"):
        check(browser.evaluate(f"document.getElementById('{card}').hidden"), f"the other user is offered no {card}")
    time.sleep(2)  # what else the page might still ask for
    dom = browser.evaluate("document.documentElement.outerHTML")
    for secret in secrets:
        check(secret not in dom, f"the other user's page holds no {secret}")
        check(not any(secret in frame for frame in browser.frames), f"the other user's WebSocket traffic holds no {secret}")
    check(browser.evaluate("document.querySelectorAll('rect').length") == 0, "nor any chart")
    # The method names themselves are in the introspection data anyone may read; a call is not.
    calls = [re.search(r'"call":\["[^"]*","org\.enagent\.ExposureNotification1","(\w+)"', frame) for frame in browser.frames]
    called = {call.group(1) for call in calls if call}
    check(called == {"GetHealthStatus"}, f"the other user's page calls no method of enagentd but GetHealthStatus, which answers it no: {called}")
    browser.screenshot("other-user")


def page_follows_enagentd(browser, daemon):
    daemon.stop()
    browser.wait("!document.getElementById('not-running').hidden && document.getElementById('status-card').hidden", "the page to say enagentd stopped")
    browser.screenshot("not-running")
    daemon.start()
    browser.wait("document.getElementById('not-running').hidden && !document.getElementById('status-card').hidden", "the page to follow enagentd back")
    daemon.stop()
    browser.open(PAGE)
    browser.wait("!document.getElementById('not-running').hidden", "a page opened without enagentd to say so")
    daemon.start()
    browser.wait("document.getElementById('not-running').hidden && !document.getElementById('sightings-card').hidden", "that page to follow enagentd")
    passed("the page says when enagentd is not running, also when it opens without it, and follows it when it is back")
