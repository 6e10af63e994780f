#!/usr/bin/env python3
"""Renders the figures in docs/ from the runs recorded in docs/figures/*.json.

A rendered block in a Markdown file under docs/ sits between two markers:

    <!-- figures:NAME/VIEW begin -->
    ...
    <!-- figures:NAME/VIEW end -->

NAME is the recorded run, docs/figures/NAME.json; the part of NAME before its first "-" says what
it records (bench: `make bench`, footprint: scripts/check-footprint.sh), VIEW which of its views
the block shows.

    render-figures.py write       rewrites every block from its JSON
    render-figures.py check       fails, naming the file and the block, where a block differs from
                                  what `write` would put there (`make check-figures`)
    render-figures.py show JSON   prints every view of JSON, a file named as NAME.json is
                                  (`make bench-smoke`: what enbench writes renders)
"""
import json
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
FIGURES = DOCS / "figures"
BLOCK = re.compile(r"<!-- figures:(?P<name>[\w.-]+)/(?P<view>[\w-]+) begin -->\n(?P<body>.*?)<!-- figures:(?P=name)/(?P=view) end -->",
                   re.DOTALL)


class FigureError(Exception):
    """A block that cannot be rendered: its JSON is missing or lacks a figure, or its view is unknown."""


# Numbers as the pages write them.

def count(n):
    """A count of keys or sightings: 500k, 1M, 356k, 8.9k."""
    for size, suffix in ((1_000_000, "M"), (1_000, "k")):
        if n >= size:
            value = n / size
            return f"{value:.0f}{suffix}" if value >= 10 else f"{value:.2g}{suffix}"
    return str(n)


def rate(per_second):
    """1.39 M, or 975,000 (three significant digits)."""
    if per_second >= 1_000_000:
        return f"{per_second / 1_000_000:.2f} M"
    return f"{float(f'{per_second:.3g}'):,.0f}"


def ratio(value):
    return f"{value:.2f}×"


def megabytes(value):
    return f"{value:.0f} MB"


def faster_or_slower(change):
    """A time against offline's, from their ratio minus one: 14 % faster than offline."""
    if round(abs(change) * 100) == 0:
        return "as fast as offline (within 0.5 %)"
    return f"{abs(change) * 100:.0f} % {'faster' if change < 0 else 'slower'} than offline"


def date(iso):
    """2026-11-26 11:30 UTC, from ISO 8601 in UTC."""
    day, _, time = iso.partition("T")
    return f"{day} {time[:5]} UTC"


# make bench (enbench's BenchReport).

def bench_machine(run):
    machine = run["machine"]
    # x86's sha_ni and arm64's sha2 both name SHA-256 instructions.
    named = sorted({{"aes": "AES", "sha_ni": "SHA-256", "sha2": "SHA-256"}[f] for f in machine["cryptoFeatures"]})
    kind = "a virtual machine" if machine["virtualMachine"] else "bare metal"
    with_features = f" with {' and '.join(named)} instructions" if named else ""
    # A quarter of a core taken by others already shows in the timings; the ratios suffer less.
    shared = ", so the timings are lower than an idle machine's" if machine["otherWorkCores"] >= 0.25 else ""
    return (f"Measured {date(run['measured'])} by `make bench` on {machine['cores']} cores of {machine['cpu']}{with_features} "
            f"({kind}; Linux {machine['kernel']}, {machine['openSSL']}). Other work took {machine['otherWorkCores']:.2f} of the "
            f"{machine['cores']} cores on average during the run{shared} (one-minute load average {machine['loadAverage']:.2f} "
            f"at its start).\n")


def bench_table(run):
    sizes, derivation, inputs, detection = run["sizes"], run["derivation"], run["inputs"], run["detection"]
    ceiling = derivation["ceilingKeysPerSecond"]
    startup = run["startup"]
    offline_lines, offline_database, daemon = detection["offlineJSONLines"], detection["offlineDatabase"], detection["daemon"]
    lookups = {(entry["sightings"], entry["oneDay"]): entry for entry in run["lookups"]}

    def lookup_pair(sightings, field="keysPerSecond"):
        every, one_day = lookups[(sightings, False)], lookups[(sightings, True)]
        return (f"{ratio(every[field] / ceiling)} / {ratio(one_day[field] / ceiling)} the ceiling",
                every["count"], one_day["count"])

    daemon_change = daemon["seconds"] / offline_database["seconds"] - 1
    lines_lookup, lines_count, lines_day = lookup_pair("jsonLines")
    database_lookup, database_count, database_day = lookup_pair("database")
    cores = run["machine"]["cores"]
    # Runs recorded before the daemon ran both sizes and C ran on every core lack these rows.
    small_rows = [
        ("the same from a database of those sightings",
         f"{detection['offlineSmallDatabase']['seconds']:.2f} s, {rate(detection['offlineSmallDatabase']['keysPerSecond'])} keys/s "
         f"({ratio(detection['offlineSmallDatabase']['keysPerSecond'] / ceiling)}), {megabytes(detection['offlineSmallDatabase']['peakMemoryMB'])}"),
        ("that through enagentd (a detection session)",
         f"{detection['daemonSmall']['seconds']:.2f} s, "
         f"{faster_or_slower(detection['daemonSmall']['seconds'] / detection['offlineSmallDatabase']['seconds'] - 1)}; "
         f"enagentd peaks at {megabytes(detection['daemonSmall']['daemonPeakMemoryMB'])}"),
    ] if "daemonSmall" in detection else []
    all_cores_rows = [
        (f"C derivation and lookups, all {cores} cores, among the {count(lines_count)} sightings / among one day's {count(lines_day)}",
         lookup_pair("jsonLines", "allCoresKeysPerSecond")[0]),
        (f"the same among {count(database_count)} sightings / among one day's {count(database_day)}",
         lookup_pair("database", "allCoresKeysPerSecond")[0]),
    ] if all("allCoresKeysPerSecond" in entry for entry in run["lookups"]) else []
    rows = [
        ("derivation ceiling, C/OpenSSL, one core", f"{rate(ceiling)} keys/s"),
        ("enagent's derivation, one core",
         f"{rate(derivation['enagentKeysPerSecond'])} keys/s ({ratio(derivation['enagentKeysPerSecond'] / ceiling)} the ceiling)"),
        ("JSON Lines sightings", f"{rate(inputs['jsonLinesPerSecond'])} lines/s"),
        ("agent database into the matching index", f"{rate(inputs['databaseSightingsPerSecond'])} sightings/s"),
        (f"sighting inserts, batches of {sizes['insertBatchSize']:,}", f"{rate(inputs['insertsPerSecond'])} sightings/s"),
        (f"`enctl detect offline`, {count(sizes['smallExportKeys'])} keys × {count(sizes['jsonLinesSightings'])} JSON Lines sightings",
         f"{offline_lines['seconds']:.2f} s, {rate(offline_lines['keysPerSecond'])} keys/s "
         f"({ratio(offline_lines['keysPerSecond'] / ceiling)} the ceiling), {megabytes(offline_lines['peakMemoryMB'])}"),
        *small_rows,
        (f"`enctl detect offline`, {count(sizes['largeExportKeys'])} keys × {count(sizes['databaseSightings'])} sightings in a database",
         f"{offline_database['seconds']:.2f} s, {rate(offline_database['keysPerSecond'])} keys/s "
         f"({ratio(offline_database['keysPerSecond'] / ceiling)}), {megabytes(offline_database['peakMemoryMB'])}"),
        memory_row(sizes, detection),
        ("the same through enagentd (a detection session)",
         f"{daemon['seconds']:.2f} s, {faster_or_slower(daemon_change)}; "
         f"enagentd peaks at {megabytes(daemon['daemonPeakMemoryMB'])}"),
        (f"C derivation and lookups, one core, among the {count(lines_count)} sightings / among one day's {count(lines_day)} of them",
         lines_lookup),
        (f"the same among {count(database_count)} sightings / among one day's {count(database_day)} of them", database_lookup),
        *all_cores_rows,
        ("enagentd's start, exec to READY=1 (no radio, a new database)",
         f"{startup['fastestMilliseconds']:.0f} ms fastest, {startup['medianMilliseconds']:.0f} ms median of {sizes['startupRuns']}; "
         f"idle RSS {startup['idleResidentMB']:.1f} MB"),
    ]
    return "| measure | figure |\n|---|---|\n" + "".join(f"| {measure} | {figure} |\n" for measure, figure in rows)


def memory_by_keys(sizes, detection):
    """Peak memory of `enctl detect offline` against the database's sightings with fewer keys and
    with all of them, or None for a run recorded before it was measured."""
    fewer = detection.get("offlineDatabaseFewerKeys")
    if fewer is None or "fewerExportKeys" not in sizes:
        return None
    return (sizes["fewerExportKeys"], fewer["peakMemoryMB"], sizes["largeExportKeys"], detection["offlineDatabase"]["peakMemoryMB"])


MEMORY_GOAL_MB = 10


def memory_row(sizes, detection):
    measure = "`enctl detect offline`, peak memory at {} keys / at {} keys, the same {} sightings in a database"
    figures = memory_by_keys(sizes, detection)
    if figures is None:
        return (measure.format("100k", "1M", count(sizes["databaseSightings"])), "not measured in this run")
    fewer_keys, fewer_mb, all_keys, all_mb = figures
    return (measure.format(count(fewer_keys), count(all_keys), count(sizes["databaseSightings"])),
            f"{megabytes(fewer_mb)} / {megabytes(all_mb)} ({all_mb - fewer_mb:+.0f} MB)")


def bench_goals(run):
    """Issue 49's goals against this run. The whole process is held to the C baseline deriving and
    looking up on every core, measured in the same run: the most these cores allow before a file
    is read. Runs recorded before the C baseline ran on every core get the older goals' lines."""
    cores, ceiling = run["machine"]["cores"], run["derivation"]["ceilingKeysPerSecond"]
    detection, sizes, derivation = run["detection"], run["sizes"], run["derivation"]
    lines = detection["offlineJSONLines"]
    large = detection["offlineDatabase"]
    daemon_change = detection["daemon"]["seconds"] / large["seconds"] - 1

    def verdict(met):
        return "met" if met else "not met"

    derivation_ratio = derivation["enagentKeysPerSecond"] / ceiling
    goals = (f"- enagent's derivation within 5 % of the C baseline on one core: {verdict(derivation_ratio >= 0.95)}, "
             f"{ratio(derivation_ratio)} the ceiling.\n")
    if all("allCoresKeysPerSecond" in entry for entry in run["lookups"]):
        # The C program on the same sightings as enctl; among one day's alone (a smaller set, as
        # if every key were of one day) it is faster still: the bound beside the goal.
        lookups = {(entry["sightings"], entry["oneDay"]): entry["allCoresKeysPerSecond"] for entry in run["lookups"]}
        one_day_count = next(entry["count"] for entry in run["lookups"] if entry["sightings"] == "jsonLines" and entry["oneDay"])
        share = lines["keysPerSecond"] / lookups[("jsonLines", False)]
        goals += (f"- `enctl detect offline`, {count(sizes['smallExportKeys'])} keys × {count(sizes['jsonLinesSightings'])} sightings, "
                  f"at least 0.8× the C program's derivation and lookups among the same sightings on all {cores} cores "
                  f"({rate(lookups[('jsonLines', False)])} keys/s): {verdict(share >= 0.8)}, {ratio(share)}; "
                  f"{ratio(lines['keysPerSecond'] / lookups[('jsonLines', True)])} of its rate among one day's "
                  f"{count(one_day_count)} "
                  f"of them ({rate(lookups[('jsonLines', True)])} keys/s).\n")
    goals += (f"- {count(sizes['largeExportKeys'])} keys × {count(sizes['databaseSightings'])} sightings from a database in at most "
              f"1.5 s and 200 MB: {verdict(large['seconds'] <= 1.5 and large['peakMemoryMB'] <= 200)}, {large['seconds']:.2f} s and "
              f"{megabytes(large['peakMemoryMB'])}.\n")
    changes = [daemon_change]
    if "daemonSmall" in detection:
        changes.insert(0, detection["daemonSmall"]["seconds"] / detection["offlineSmallDatabase"]["seconds"] - 1)
    goals += (f"- detection through enagentd within 10 % of offline"
              f"{', both sizes' if len(changes) == 2 else ''}: {verdict(all(change <= 0.10 for change in changes))}, "
              f"{' and '.join(faster_or_slower(change) for change in changes)}.\n")
    return goals + memory_goal(sizes, detection)


def memory_goal(sizes, detection):
    """Peak memory independent of keys: within MEMORY_GOAL_MB from the fewer keys to all of them."""
    figures = memory_by_keys(sizes, detection)
    if figures is None:
        return "- peak memory independent of keys: not measured in this run.\n"
    fewer_keys, fewer_mb, all_keys, all_mb = figures
    met = "met" if all_mb - fewer_mb <= MEMORY_GOAL_MB else "not met"
    return (f"- peak memory independent of keys (within {MEMORY_GOAL_MB} MB): {met}, {megabytes(fewer_mb)} at {count(fewer_keys)} "
            f"and {megabytes(all_mb)} at {count(all_keys)}.\n")


# scripts/check-footprint.sh FIGURES=write.

def footprint_sizes(run):
    def size(name):
        return f"{run[name] / 1_000_000:.1f} MB | {run['limits'][name] / 1_000_000:.0f} MB"

    icu = "the binaries carry ICU's data" if run["icuData"] else "neither binary carries ICU's data"
    return (f"Measured {date(run['measured'])} by `scripts/check-footprint.sh` on {run['package']} "
            f"(enagent {run['version']} for {run['architecture']}, built {date(run['built'])}); {icu}.\n\n"
            "| | size | at most |\n|---|---|---|\n"
            f"| the package | {size('packageBytes')} |\n"
            f"| enagentd, installed (stripped, Swift's runtime and Foundation inside) | {size('enagentdBytes')} |\n"
            f"| enctl, installed | {size('enctlBytes')} |\n")


# enbench storage (its StorageReport).

def size(value):
    """Bytes as the pages write them: 870 kB, 12.4 MB, 1.3 GB."""
    for unit, suffix in ((1e9, "GB"), (1e6, "MB"), (1e3, "kB")):
        if value >= unit:
            return f"{value / unit:.1f} {suffix}" if value < 100 * unit else f"{value / unit:.0f} {suffix}"
    return f"{value:.0f} B"


def storage_table(run):
    machine, scans_per_day, keep = run["machine"], run["scansPerDay"], run["retentionDays"]
    kind = "a virtual machine" if machine["virtualMachine"] else "bare metal"
    lines = [f"Measured {date(run['measured'])} by `make bench` (`enbench storage`) on {machine['cpu']} ({kind}; Linux "
             f"{machine['kernel']}): a day on the default schedule ({scans_per_day} scans), each phone heard "
             f"{run['days'][0]['receptionsPerScan']} times a scan; a sighting is one phone in one scan.", "",
             f"| phones around | sightings a day | rows a day | database a day | per sighting | written a day | per sighting "
             f"| at rest after {keep} days | a 32 GB card written whole every |",
             "|---|---|---|---|---|---|---|---|---|"]
    for figures in run["days"]:
        day = scans_per_day / figures["scans"]
        sightings = figures["devices"] * figures["scans"]
        database, written = figures["databaseBytes"] * day, figures["writtenBytes"] * day
        lines.append(f"| {figures['devices']:,} | {count(round(sightings * day))} | {count(round(figures['rows'] * day))} | {size(database)} "
                     f"| {figures['databaseBytes'] / sightings:,.0f} B | {size(written)} | {figures['writtenBytes'] / sightings:,.0f} B "
                     f"| {size(database * keep)} | {32e9 / written:,.0f} days |")
    return "\n".join(lines) + "\n"


VIEWS = {
    "bench": {"machine": bench_machine, "table": bench_table, "goals": bench_goals},
    "storage": {"table": storage_table},
    "footprint": {"sizes": footprint_sizes},
}


def kind_of(name):
    return name.split("-")[0]


def render(name, view, run, source):
    views = VIEWS.get(kind_of(name))
    if views is None or view not in views:
        raise FigureError(f"no view {kind_of(name)}/{view} (known: "
                          + ", ".join(f"{kind}/{v}" for kind, vs in VIEWS.items() for v in vs) + ")")
    try:
        return views[view](run)
    except (KeyError, TypeError) as error:
        raise FigureError(f"{source} lacks a figure the view {view} needs: {error}") from error


def load(path):
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise FigureError(f"{path.relative_to(ROOT)} does not exist (make bench, or check-footprint.sh with FIGURES=write, writes it)")
    except json.JSONDecodeError as error:
        raise FigureError(f"{path.relative_to(ROOT)}: not JSON: {error}")


def rendered_document(text):
    """The document with every block rendered afresh, and the names of the blocks that changed."""
    changed = []

    def replace(match):
        name, view = match["name"], match["view"]
        source = FIGURES / f"{name}.json"
        try:
            body = render(name, view, load(source), source.relative_to(ROOT))
        except FigureError as error:
            raise FigureError(f"figures:{name}/{view}: {error}") from error
        if body != match["body"]:
            changed.append(f"figures:{name}/{view}")
        return f"<!-- figures:{name}/{view} begin -->\n{body}<!-- figures:{name}/{view} end -->"

    return BLOCK.sub(replace, text), changed


def documents():
    return sorted(DOCS.rglob("*.md"))


def write():
    for path in documents():
        text = path.read_text()
        new, changed = rendered_document(text)
        if changed:
            path.write_text(new)
            print(f"{path.relative_to(ROOT)}: rendered {', '.join(changed)}")


def check():
    stale = []
    for path in documents():
        try:
            _, changed = rendered_document(path.read_text())
        except FigureError as error:
            stale.append(f"{path.relative_to(ROOT)}: {error}")
            continue
        stale += [f"{path.relative_to(ROOT)}: {block} differs from what scripts/render-figures.py renders from "
                  f"docs/figures/{block.split(':')[1].split('/')[0]}.json" for block in changed]
    for line in stale:
        print(f"check-figures: {line}", file=sys.stderr)
    if stale:
        print("check-figures: a figure in docs/ comes from its JSON only: re-run its generator (make bench, or "
              "make check-footprint FIGURES=write), or scripts/render-figures.py write after changing the renderer", file=sys.stderr)
        return 1
    count = len(documents())
    print(f"check-figures: every rendered block in {count} file{'' if count == 1 else 's'} under docs/ matches its recorded run")
    return 0


def show(path):
    path = pathlib.Path(path).resolve()
    run = json.loads(path.read_text())
    name = path.stem
    views = VIEWS.get(kind_of(name))
    if views is None:
        raise FigureError(f"{path.name}: its name says no kind of run ({', '.join(VIEWS)})")
    for view in views:
        print(f"<!-- figures:{name}/{view} -->\n{render(name, view, run, path.name)}")
    return 0


def main(arguments):
    try:
        if arguments == ["write"]:
            write()
            return 0
        if arguments == ["check"]:
            return check()
        if len(arguments) == 2 and arguments[0] == "show":
            return show(arguments[1])
    except FigureError as error:
        print(f"render-figures: {error}", file=sys.stderr)
        return 1
    print("usage:\n" + __doc__.strip().split("\n\n")[-1], file=sys.stderr)
    return 64


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
