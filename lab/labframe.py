"""labframe.py: what the lab's reports share (report.py, soak-report.py, service-report.py).

A run folder holds the guest's manifest, phases.jsonl, one JSON object a line written by the
shell's `phase NAME KEY=VALUE...` (agent-lib.sh) with the guest's clocks at that moment
("realtime": unix seconds, the clock btmon stamps its capture with; "monotonic": /proc/uptime),
beside the raw artefacts the lines name (btmon.snoop, the agents' folders, logs). boot-lab.sh adds
host-load, the host's load average sampled while the guest ran.

A report is a table of Checks, each a name to run it alone by, the title it prints and a function
of the Lab and a `fail` callable; run_report runs them in order, each to the end even when one
before it failed, and report() as its command line asked (arguments)."""
import argparse, functools, json, os, sqlite3, sys

import cpushare

MANIFEST = "phases.jsonl"


class Lab:
    """One run folder, read once."""

    def __init__(self, folder):
        self.folder = folder
        self.manifest = []
        if self.exists(MANIFEST):
            with open(self.path(MANIFEST)) as manifest:
                self.manifest = [json.loads(line) for line in manifest]

    def path(self, name):
        return os.path.join(self.folder, name)

    def exists(self, name):
        return os.path.exists(self.path(name))

    def text(self, name):
        with open(self.path(name), errors="replace") as file:
            return file.read()

    def lines(self, name):
        return self.text(name).splitlines()

    def entries(self, name):
        """Every manifest line of the phase NAME, in the order written."""
        return [entry for entry in self.manifest if entry["phase"] == name]

    def has(self, name):
        return bool(self.entries(name))

    def phase(self, name):
        """The last manifest line of the phase NAME (a check of a phase that did not run fails)."""
        found = self.entries(name)
        if not found:
            raise LookupError(f"no phase {name} in {MANIFEST}")
        return found[-1]

    def at(self, name):
        """The guest's unix time when the phase NAME was written."""
        return self.phase(name)["realtime"]

    def rows(self, agent, sql):
        db = sqlite3.connect(f"file:{self.path(agent)}/enagent.db?mode=ro", uri=True)
        try:
            return db.execute(sql).fetchall()
        finally:
            db.close()

    @functools.cached_property
    def snoop(self):
        return self.path("btmon.snoop")

    def host_load(self):
        """How loaded the host was while the guest ran: a line for the report (host-load holds
        'UNIX LOAD1 LOAD5 LOAD15' samples)."""
        if not self.exists("host-load"):
            return "host load: not recorded"
        with open(self.path("host-load")) as recorded:
            samples = [float(line.split()[1]) for line in recorded if line.strip()]
        if not samples:
            return "host load: no sample"
        return (f"host load average (1 min) while the guest ran: {samples[0]:.1f} at its start, {max(samples):.1f} at most, "
                f"{samples[-1]:.1f} at its end ({len(samples)} samples)")


def heading(lab):
    """A report's first lines: the stack under test (the manifest's phase "stack") and the host's load."""
    if lab.has("stack"):
        print(f"  stack: {lab.phase('stack')['description']}")
    print(f"  {lab.host_load()}")
    if lab.exists("cpu.jsonl"):
        for line in cpushare.summary(lab.path("cpu.jsonl")):
            print(f"  the guest's processors {line}")


def failed_steps(lab, fail):
    """A check of the phases' commands: each step a run's script marked failed (its `must`)."""
    for entry in lab.entries("failed"):
        fail(f"steps: {entry.get('step')}")
    print(f"  {len(lab.entries('failed'))} failed steps")


def agents_stopped(lab, fail, agents):
    """A check of each agent's exit status on SIGTERM (the file AGENT/exit-status), which is 0."""
    for agent in agents:
        status = lab.text(f"{agent}/exit-status").strip() if lab.exists(f"{agent}/exit-status") else "none"
        print(f"  agent {agent} stopped on SIGTERM with exit status {status}")
        if status != "0":
            fail(f"agent {agent} exited with status {status} on SIGTERM, not 0")


class Check:
    """A check; its title None when it prints its own line (the service report's "ok NAME: DETAIL")."""

    def __init__(self, name, title, run):
        self.name, self.title, self.run = name, title, run


def run_report(checks, lab, only=(), ahead=lambda lab: None):
    """Prints each check of `checks` (or only those named) and then the failures; returns
    {check name: its failures}. `ahead(lab)` prints the report's first lines."""
    ahead(lab)
    failures = {}
    for check in checks:
        if only and check.name not in only:
            continue
        if check.title is not None:
            print(check.title)
        found = failures.setdefault(check.name, [])
        try:
            check.run(lab, found.append)
        except Exception as error:
            cause = f"{type(error).__name__}: {error}"
            found.append(f"{(check.title or check.name).split(' (')[0].lower()}: could not be checked ({cause})")
            print(f"  could not be checked: {cause}" if check.title is not None else f"FAILED {check.name}: could not be checked ({cause})")
    return failures


def report(verdict, given, lab, checks, ahead=lambda lab: None):
    """Runs the report the command line asked for (arguments); returns its exit status: with
    --check, 1 unless every check run held; 2 for a check of no such name."""
    if given.list:
        for check in checks:
            print(f"{check.name:22} {check.title or ''}".rstrip())
        return 0
    unknown = sorted(set(given.check or ()) - {check.name for check in checks})
    if unknown:
        print(f"no check named {', '.join(unknown)}; the checks: {', '.join(check.name for check in checks)}", file=sys.stderr)
        return 2
    return conclude(verdict, run_report(checks, lab, only=given.check or (), ahead=ahead), gate=given.check is not None)


def conclude(verdict, failures, gate):
    """Prints the failures and `verdict: PASS|FAIL`; the exit status: 1 on a failure when gated."""
    listed = [failure for found in failures.values() for failure in found]
    if listed:
        print("FAILED:\n  " + "\n  ".join(listed))
    print(f"{verdict}: " + ("FAIL" if listed else "PASS"))
    return 1 if listed and gate else 0


def enctl(given=None):
    """The enctl a report runs: the one named on its command line, else $ENCTL, else the debug build."""
    return given or os.environ.get("ENCTL") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "../.build/debug/enctl")


def arguments(description, extra=()):
    """The command line every report takes: RUN_DIR, `extra` positionals, --check [NAME...] (fail
    unless every check, or each one named, which then runs alone, holds) and --list."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("run", metavar="RUN_DIR")
    for name, help in extra:
        parser.add_argument(name, nargs="?", help=help)
    parser.add_argument("--check", nargs="*", metavar="NAME", help="exit 1 unless every check (or each one named, which then runs alone) holds")
    parser.add_argument("--list", action="store_true", help="list the checks' names and titles")
    return parser.parse_args()
