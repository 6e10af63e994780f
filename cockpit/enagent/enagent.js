// enagent's Cockpit page. It talks to enagentd over the system bus as the person logged in (as root
// with Cockpit's administrative access on), so the bus policy and enagentd's own check decide what
// it shows: the properties to anyone; the controls, the sightings per hour, exposures, tests and
// sharing to root and the group enagent only. It asks for the latter only after GetHealthStatus
// answered, so another user's page sends no request whose answer would be health data. Live: it
// redraws on the properties' change signals, on ExposureDetected (after WatchExposures) and when
// enagentd comes or goes; it never polls. The risk card is the latest detection's verdict, by the
// health authority's rules: only increased risk says "exposed".
"use strict";

const SERVICE = "org.enagent.ExposureNotification1";
const PATH = "/org/enagent/ExposureNotification1";
const INTERFACE = "org.enagent.ExposureNotification1";
const GROUP = "enagent";
const HOUR = 3600;
const DAY = 86400;
// As `enctl status` says it to a user outside the group (its browser test compares them).
const HEALTH_HIDDEN = "Whether you were exposed or shared a positive test is shown to root and members of the group " +
    GROUP + " only; ask an administrator to add you.";
// As `enctl status` says them.
const REMINDERS = {
    "detection-overdue": () => "Warning: no exposure detection has succeeded for more than 24 hours.",
    "upload-refused": () => "The key server refused your keys for good: they were not shared. See the test results below.",
    "recent-exposure": (health) => "You were exposed on " + utcDay(health.latestExposureDay) +
        ", with increased risk by your health authority's rules: see the risk below and follow your health authority's advice.",
};
// As `enctl risk` says them.
const RISK_ADVICE = {
    increased: (health) => "Increased risk: you were exposed on " + utcDay(health.latestExposureDay) + ". Follow your health authority's advice.",
    low: () => "Low risk: encounters with someone who tested positive, below your health authority's alert threshold. No action is needed.",
    none: () => "No risk: no encounter that counts by your health authority's rules.",
};

// As the person, or as root when they turned on Cockpit's administrative access ("try": else as themselves).
const ACCESS = { superuser: "try" };
// The bus itself, for NameOwnerChanged: a client for enagentd's name ends when the name has no
// owner as it opens, and this says when enagentd comes. A client of the bus's own name, so that
// its matches take their sender from it: Cockpit's C bridge (Debian 12's Cockpit 287) refuses a
// match without a sender on a client without a name, and its Python bridge (Debian 13's Cockpit
// 337) fails on the "name" field that the C bridge took for the sender.
const bus = cockpit.dbus("org.freedesktop.DBus", { bus: "system", ...ACCESS });
// enagentd's name, while it has an owner or had one since the client opened; else null.
let client = null;
let proxy = null;
// null: not asked yet (or enagentd gone); false: the caller may not; else the health status.
let health = null;
let running = false;

const $ = (id) => document.getElementById(id);

function utcDay(seconds) {
    return new Date(seconds * 1000).toISOString().slice(0, 10);
}

function utcTime(seconds) {
    return new Date(seconds * 1000).toISOString().slice(0, 19).replace("T", " ") + " UTC";
}

// Markdown's `code` as <code>, the rest as text.
function withCode(element, markdown) {
    element.textContent = "";
    markdown.split("`").forEach((part, index) => {
        if (index % 2 === 1) {
            const code = document.createElement("code");
            code.textContent = part;
            element.appendChild(code);
        } else {
            element.appendChild(document.createTextNode(part));
        }
    });
}

function decibels(value) {
    return value === 0 ? "none" : (value > 0 ? "+" : "") + value + " dB";
}

function fail(message) {
    $("failure").textContent = message;
    $("failure").hidden = !message;
}

function refused(error) {
    return /AccessDenied|NotAuthorized/.test(error.name || "") || /AccessDenied|NotAuthorized/.test(error.message || "");
}

function call(method, args, signature) {
    if (!client) return Promise.reject(new Error("enagentd is not running"));
    // A native promise: a handler that throws rejects it, where cockpit's own reports the throw as
    // uncaught (a GetHealthStatus in flight as enagentd restarted: NoReply, thrown on).
    return Promise.resolve(client.call(PATH, INTERFACE, method, args || [], signature ? { type: signature } : {}));
}

// MARK: Status

function statusRows(p) {
    let exposureRisk = "only for root and members of the group " + GROUP;
    if (health) exposureRisk = exposureRiskText(health);
    const rows = [
        ["Enabled", p.Enabled ? "yes" : "no"],
        ["Paused until", p.PausedUntil > 0 ? utcTime(p.PausedUntil) : "-"],
        ["Adapter", p.Adapter || "-"],
        ["Advertising", p.Advertising ? "yes" : "no"],
        ["Scanning", p.Scanning ? "yes" : "no"],
        ["Sightings stored", String(p.SightingsStored)],
        ["Last detection", p.LastDetection > 0 ? utcTime(p.LastDetection) : "never"],
        ["Last detection error", p.LastDetectionError || "-"],
        ["RSSI correction", decibels(p.RssiCorrection) + " by default"],
    ];
    for (const [address, name, correction, configured] of p.AdapterRssiCorrections || []) {
        const notes = name ? [address || "address not known yet"] : ["not in use"];
        if (!configured) notes.push("the default");
        rows.push(["\u2003" + (name || address), decibels(correction) + " (" + notes.join(", ") + ")"]);
    }
    rows.push(["Exposure risk", exposureRisk], ["Version", p.Version]);
    return rows;
}

// As `enctl status` says it.
function exposureRiskText(health) {
    if (!health.riskModel) return "none (no detection yet)";
    if (health.risk === "increased") return "increased (" + utcDay(health.latestExposureDay) + ", UTC day)";
    if (health.risk === "low") return "low (below the alert threshold)";
    return "none";
}

function renderRisk() {
    $("risk-card").hidden = !running || !health;
    if ($("risk-card").hidden) return;
    const level = health.riskModel ? health.risk : "none";
    $("risk-card").className = "en-card en-risk en-risk-" + level;
    $("risk-level").textContent = health.riskModel ? level : "no verdict yet";
    $("risk-level").className = "en-badge en-risk-" + level;
    $("risk-advice").textContent = health.riskModel ? RISK_ADVICE[level](health) : "No verdict yet: no exposure detection has finished.";
    const days = (count, latest) => count === 0 ? "none" : count + ", the latest " + utcDay(latest);
    const fields = $("risk-fields");
    fields.textContent = "";
    const rows = health.riskModel ? [
        ["Increased-risk days", days(health.increasedRiskDays, health.latestExposureDay)],
        ["Increased-risk encounters", String(health.increasedRiskEncounters)],
        ["Low-risk days", days(health.lowRiskDays, health.latestLowRiskDay)],
        ["Low-risk encounters", String(health.lowRiskEncounters)],
        ["Assessed", utcTime(health.riskAssessedAt)],
    ] : [];
    for (const [name, value] of rows) {
        const term = document.createElement("dt");
        term.textContent = name;
        const detail = document.createElement("dd");
        detail.textContent = value;
        fields.append(term, detail);
    }
    $("risk-model").textContent = health.riskModel ? "Model: " + health.riskModel + "." : "";
}

function renderStatus() {
    renderRisk();
    $("not-running").hidden = running;
    $("status-card").hidden = !running || !proxy || !proxy.valid;
    if ($("status-card").hidden) return;
    const p = proxy.data;
    $("status-name").textContent = p.Status;
    $("status-name").className = "en-badge en-status-" + p.Status;
    const entry = window.ENAGENT_STATUSES[p.Status];
    withCode($("status-meaning"), entry ? entry.meaning : "");
    withCode($("status-todo"), entry ? "What to do: " + entry.todo : "");
    const fields = $("status-fields");
    fields.textContent = "";
    for (const [name, value] of statusRows(p)) {
        const term = document.createElement("dt");
        term.textContent = name;
        const detail = document.createElement("dd");
        detail.textContent = value;
        fields.append(term, detail);
    }
    const reminders = $("reminders");
    reminders.textContent = "";
    for (const reminder of health ? health.reminders : p.Reminders || []) {
        const item = document.createElement("li");
        item.textContent = REMINDERS[reminder] ? REMINDERS[reminder](health) : "Reminder: " + reminder;
        reminders.appendChild(item);
    }
    $("health-hidden").textContent = HEALTH_HIDDEN;
    $("health-hidden").hidden = health !== false;
    // Offers nothing enagentd would refuse: the controls for those it lets change its state.
    $("controls").hidden = !health;
    $("enable").hidden = p.Enabled;
    $("disable").hidden = !p.Enabled;
    $("pause").parentElement.hidden = !p.Enabled || p.Status === "paused";
    $("resume").hidden = p.Status !== "paused";
}

// MARK: Sightings per hour

const SVG = "http://www.w3.org/2000/svg";

function svgElement(name, attributes, text) {
    const element = document.createElementNS(SVG, name);
    for (const [key, value] of Object.entries(attributes)) element.setAttribute(key, value);
    if (text !== undefined) element.textContent = text;
    return element;
}

// Every hour from the first counted one to the current one, those the daemon did not list as zeros.
function hourlyRows(counted, now) {
    if (counted.length === 0) return [];
    const byHour = new Map(counted.map(([start, sightings, identifiers]) => [start, { sightings, identifiers }]));
    const current = now - now % HOUR;
    const rows = [];
    for (let hour = Math.min(counted[0][0], current); hour <= Math.max(current, counted[counted.length - 1][0]); hour += HOUR) {
        const row = byHour.get(hour) || { sightings: 0, identifiers: 0 };
        rows.push({ start: hour, sightings: row.sightings, identifiers: row.identifiers });
    }
    return rows;
}

function drawSightings(counted) {
    const chart = $("sightings-chart");
    chart.textContent = "";
    const rows = hourlyRows(counted, Math.floor(Date.now() / 1000));
    if (rows.length === 0) {
        chart.textContent = "No sightings stored.";
        $("sightings-total").textContent = "";
        return;
    }
    const width = 960, height = 220, left = 48, bottom = 28, top = 8;
    const largest = Math.max(1, ...rows.map((row) => row.sightings));
    const step = (width - left) / rows.length;
    const y = (value) => top + (height - top - bottom) * (1 - value / largest);
    const svg = svgElement("svg", { viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": "sightings per hour", class: "en-svg" });
    for (const value of [0, largest / 2, largest]) {
        svg.appendChild(svgElement("line", { x1: left, x2: width, y1: y(value), y2: y(value), class: "en-grid" }));
        svg.appendChild(svgElement("text", { x: left - 6, y: y(value) + 4, class: "en-axis", "text-anchor": "end" }, String(Math.round(value))));
    }
    let line = "";
    rows.forEach((row, index) => {
        const x = left + index * step;
        const bar = svgElement("rect", {
            x: x + step * 0.1, y: y(row.sightings), width: Math.max(step * 0.8, 0.5), height: y(0) - y(row.sightings),
            class: "en-bar", "data-hour": row.start, "data-sightings": row.sightings, "data-identifiers": row.identifiers,
        });
        bar.appendChild(svgElement("title", {}, `${utcTime(row.start)}: ${row.sightings} sightings, ${row.identifiers} identifiers`));
        svg.appendChild(bar);
        line += (index === 0 ? "M" : "L") + (x + step / 2).toFixed(1) + "," + y(row.identifiers).toFixed(1);
        if (row.start % DAY === 0 || index === 0) {
            svg.appendChild(svgElement("text", { x, y: height - 8, class: "en-axis" }, utcDay(row.start).slice(5)));
        }
    });
    svg.appendChild(svgElement("path", { d: line, class: "en-line" }));
    chart.appendChild(svg);
    const total = rows.reduce((sum, row) => sum + row.sightings, 0);
    $("sightings-total").textContent = `${total} sightings in ${rows.length} hours, from ${utcTime(rows[0].start)}.`;
}

// MARK: Exposures, tests, uploads

const REPORT_TYPES = ["unknown", "confirmedTest", "confirmedClinicalDiagnosis", "selfReport", "recursive", "revoked"];
const INFECTIOUSNESS = ["none", "standard", "high"];

function fillTable(table, header, rows, empty) {
    table.textContent = "";
    if (rows.length === 0) {
        const row = table.insertRow();
        row.insertCell().textContent = empty;
        return;
    }
    const head = table.createTHead().insertRow();
    for (const name of header) {
        const cell = document.createElement("th");
        cell.textContent = name;
        head.appendChild(cell);
    }
    const body = table.createTBody();
    for (const values of rows) {
        const row = body.insertRow();
        for (const value of values) row.insertCell().textContent = value;
    }
}

// The window's smallest known attenuation, in dB; null when every RSSI was unknown.
function minimumAttenuation(scans) {
    const known = scans.map(([minimum]) => minimum).filter((value) => value >= 0);
    return known.length ? Math.min(...known) : null;
}

function drawTimeline(windows, summaries) {
    const timeline = $("exposure-timeline");
    timeline.textContent = "";
    const today = Math.floor(Date.now() / 1000 / DAY) * DAY;
    const days = 14, width = 960, height = 120, left = 8, step = (width - left) / days;
    const svg = svgElement("svg", { viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": "exposures by day", class: "en-svg" });
    const scores = new Map(summaries.map(([date, maximum]) => [date, maximum]));
    for (let index = 0; index < days; index++) {
        const day = today - (days - 1 - index) * DAY;
        const x = left + index * step;
        svg.appendChild(svgElement("text", { x: x + step / 2, y: height - 6, class: "en-axis", "text-anchor": "middle" }, utcDay(day).slice(5)));
        // The day's windows stacked, each as tall as it lasted (half a pixel a minute, an hour at most),
        // red when near (little attenuation), orange at a middle distance, grey farther or unknown.
        let top = 70;
        for (const window of windows.filter(([date]) => date === day)) {
            const attenuation = minimumAttenuation(window[4]);
            const minutes = window[4].reduce((sum, scan) => sum + scan[2], 0) / 60;
            const shade = attenuation === null ? "unknown" : attenuation <= 55 ? "near" : attenuation <= 70 ? "medium" : "far";
            const tall = Math.max(3, Math.min(60, minutes) / 2);
            top -= tall + 1;
            const mark = svgElement("rect", {
                x: x + step * 0.15, y: Math.max(0, top), width: step * 0.7, height: tall, class: "en-window en-window-" + shade,
            });
            mark.appendChild(svgElement("title", {},
                `${utcDay(day)}: ${Math.round(minutes)} min, minimum attenuation ${attenuation === null ? "unknown" : attenuation + " dB"}`));
            svg.appendChild(mark);
        }
        if (scores.has(day)) {
            svg.appendChild(svgElement("text", { x: x + step / 2, y: 84, class: "en-score", "text-anchor": "middle" }, "score " + Math.round(scores.get(day))));
        }
    }
    timeline.appendChild(svg);
    fillTable($("summaries"), ["Day (UTC)", "Max score", "Score sum", "Weighted minutes"],
        summaries.map(([date, maximum, sum, weighted]) => [utcDay(date), Math.round(maximum), Math.round(sum), (weighted / 60).toFixed(1)]),
        "No exposures.");
    fillTable($("windows"), ["Day (UTC)", "Report type", "Infectiousness", "Scans", "Min attenuation", "Duration"],
        windows.map(([date, reportType, infectiousness, , scans]) => {
            const attenuation = minimumAttenuation(scans);
            return [utcDay(date), REPORT_TYPES[reportType] || String(reportType), INFECTIOUSNESS[infectiousness] || String(infectiousness),
                String(scans.length), attenuation === null ? "unknown" : attenuation + " dB",
                Math.round(scans.reduce((sum, scan) => sum + scan[2], 0) / 60) + " min"];
        }), "No exposure windows.");
}

function drawTests(results, uploads) {
    fillTable($("test-results"), ["Test day (UTC)", "Verified by", "Recorded", "Shared", "Keys shared", "Upload"],
        results.map(([, testDate, method, , recordedAt, sharedAt, uploadPending, , uploadFailure, , sharedKeys]) => [
            testDate > 0 ? utcDay(testDate) : "unknown", method, utcTime(recordedAt), sharedAt > 0 ? utcTime(sharedAt) : "not yet",
            String(sharedKeys.length), uploadFailure ? "refused: " + uploadFailure : uploadPending ? "waiting" : "-",
        ]), "No positive test recorded.");
    fillTable($("uploads"), ["Attempts", "Last error", "Next attempt"],
        uploads.map(([, , , attempts, lastError, nextAttemptAt]) => [String(attempts), lastError || "-", utcTime(nextAttemptAt)]),
        "None.");
}

// MARK: Loading

// The counts per hour drawn, by the hour's start: all of them when the page loads, then only the
// latest hours again (enagentd counts those from its index, not the whole table).
let sightingHours = new Map();

// What only root and the group see: asked for only once GetHealthStatus answered.
function refreshSightings(latestOnly) {
    if (!health) return;
    const now = Math.floor(Date.now() / 1000);
    // The previous hour too: a scan's batch may straddle the hour.
    const since = latestOnly ? now - now % HOUR - HOUR : 0;
    call("GetSightingsPerHour", [since], "t").then(([hours]) => {
        if (!latestOnly) sightingHours = new Map();
        for (const row of hours) sightingHours.set(row[0], row);
        drawSightings([...sightingHours.values()].sort((a, b) => a[0] - b[0]));
    }).catch((error) => fail("Sightings: " + error.message));
}

function refreshExposures() {
    if (!health) return;
    Promise.all([call("GetExposureWindows"), call("GetDailySummaries", [""], "s"), call("GetTestResults"), call("GetPendingUploads")])
        .then(([[windows], [summaries], [results], [uploads]]) => {
            drawTimeline(windows, summaries);
            drawTests(results, uploads);
        })
        .catch((error) => fail("Exposures: " + error.message));
}

function refreshHealth() {
    return call("GetHealthStatus").then(([latestExposureDay, reminders, risk, riskModel, riskAssessedAt, increasedRiskDays,
        increasedRiskEncounters, latestLowRiskDay, lowRiskDays, lowRiskEncounters]) => {
        health = {
            latestExposureDay, reminders, risk, riskModel, riskAssessedAt, increasedRiskDays, increasedRiskEncounters,
            latestLowRiskDay, lowRiskDays, lowRiskEncounters,
        };
    }, (error) => {
        if (!refused(error)) throw error;
        health = false;
    }).then(() => {
        for (const card of ["sightings-card", "exposures-card", "tests-card"]) $(card).hidden = !health;
        renderStatus();
    });
}

// Everything anew: at the start and whenever enagentd (re)appears on the bus.
function loadAll() {
    fail("");
    refreshHealth().then(() => {
        if (!health) return;
        refreshSightings(false);
        refreshExposures();
        // ExposureDetected comes to callers of WatchExposures only, by name.
        return call("WatchExposures");
    }).catch((error) => fail(error.message));
}

// A burst of property changes (a scan's batch of sightings) redraws the chart once.
let sightingsTimer = null;
function sightingsChanged() {
    if (sightingsTimer) return;
    sightingsTimer = window.setTimeout(() => {
        sightingsTimer = null;
        refreshSightings(true);
    }, 2000);
}

function connect() {
    client = cockpit.dbus(SERVICE, { bus: "system", ...ACCESS });
    proxy = client.proxy(INTERFACE, PATH);
    proxy.addEventListener("changed", (event, changed) => {
        renderStatus();
        if ("SightingsStored" in changed) sightingsChanged();
        // Before the first answer of GetHealthStatus, loadAll asks for everything anyway.
        if (health !== null && ("LastDetection" in changed || "Reminders" in changed || "Enabled" in changed)) {
            refreshHealth().then(refreshExposures).catch((error) => fail(error.message));
        }
    });
    client.subscribe({ interface: INTERFACE, path: PATH, member: "ExposureDetected" }, () => {
        refreshHealth().then(refreshExposures).catch((error) => fail(error.message));
    });
    // Cockpit tells the name's owner as the client opens and whenever it changes (and closes the
    // client when the name has none as it opens): each enagentd that comes is asked for everything once.
    client.addEventListener("owner", (event, owner) => {
        running = !!owner;
        if (running) {
            proxy.wait(loadAll);
        } else {
            health = null;
        }
        renderStatus();
    });
    client.addEventListener("close", () => {
        client = null;
        running = false;
        health = null;
        renderStatus();
    });
}

function watch() {
    const appeared = { path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus", member: "NameOwnerChanged", arg0: SERVICE };
    bus.subscribe(appeared, (path, iface, signal, [, , owner]) => {
        if (owner && !client) connect();
    });
    connect();
}

// MARK: Controls

function control(promise) {
    fail("");
    promise.catch((error) => fail(error.message));
}

function confirmDisable() {
    if (window.confirm("Turn Exposure Notification off? This withdraws your consent: nothing is advertised or recorded until it is enabled again.")) {
        control(call("SetEnabled", [false], "b"));
    }
}

function share(event) {
    event.preventDefault();
    const code = $("share-code").value.trim();
    const output = $("share-output");
    output.hidden = false;
    output.textContent = "Verifying the code…\n";
    $("share").disabled = true;
    // enctl, as this user: the page has no HTTP client of its own, and enctl's checks stand.
    const run = (args) => cockpit.spawn(["enctl"].concat(args), { err: "out", ...ACCESS }).stream((data) => { output.textContent += data; });
    run(["test-result", "add", "--code", code])
        .then(() => run(["share", "--yes"]))
        .then(() => { output.textContent += "\nShared.\n"; $("share-form").reset(); })
        .catch((error) => { output.textContent += "\n" + (error.message || String(error)) + "\n"; })
        .finally(() => { $("share").disabled = false; refreshExposures(); });
}

document.addEventListener("DOMContentLoaded", () => {
    $("enable").addEventListener("click", () => control(call("SetEnabled", [true], "b")));
    $("disable").addEventListener("click", confirmDisable);
    $("pause").addEventListener("click", () => control(call("Pause", [Number($("pause-for").value)], "t")));
    $("resume").addEventListener("click", () => control(call("Resume")));
    $("share-form").addEventListener("submit", share);
    watch();
});
