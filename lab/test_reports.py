"""The lab's reports replayed on recorded runs (python3 -m unittest discover -s lab; make lab-report-test).

testdata/bt5-run.tar.xz is a run of make lab-test's bt5 kind that passed every check, trimmed to
what the checks read (btmon's capture of the agents' two controllers); testdata/soak-run.tar.xz a
two-minute soak that passed (make test of 2026-11-30 15:45, on a loaded host, with agent a's log); testdata/service-run.tar.xz a make lab-service run that passed.
ENCTL names the enctl to derive and detect with (the tree's debug build unless set)."""
import contextlib, glob, importlib.util, io, json, os, pathlib, re, shutil, subprocess, sys, tarfile, tempfile, unittest
import labframe, report
from report_checks import bounds

HERE = os.path.dirname(os.path.abspath(__file__))
ENCTL = os.environ.get("ENCTL") or os.path.join(HERE, "../.build/debug/enctl")
soak_report = importlib.util.module_from_spec(spec := importlib.util.spec_from_file_location("soak_report", os.path.join(HERE, "soak-report.py")))
spec.loader.exec_module(soak_report)
service_report = importlib.util.module_from_spec(spec := importlib.util.spec_from_file_location("service_report", os.path.join(HERE, "service-report.py")))
spec.loader.exec_module(service_report)


class RecordingLab(report.AgentsLab):
    """Remembers the name of every phase the checks ask for."""

    def __init__(self, folder):
        super().__init__(folder, ENCTL)
        self.asked = set()

    def entries(self, name):
        self.asked.add(name)
        return super().entries(name)


class Replay(unittest.TestCase):
    """A recorded run (ARCHIVE, unpacked once) and copies of it with a doctored manifest."""

    @classmethod
    def setUpClass(cls):
        cls.folder = tempfile.mkdtemp(prefix="lab-replay-")
        with tarfile.open(os.path.join(HERE, "testdata", cls.ARCHIVE)) as archive:
            archive.extractall(cls.folder, filter="data")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.folder)

    def failing(self, checks, lab):
        """The names of the checks that failed on `lab`."""
        with contextlib.redirect_stdout(io.StringIO()):
            failures = labframe.run_report(checks, lab)
        self.assertEqual(set(failures), {check.name for check in checks}, "every check ran")
        return {name for name, found in failures.items() if found}

    def assertWritten(self, names):
        """Each phase name is written by a phase call of the lab's scripts."""
        written = written_phases()
        for name in sorted(names):
            with self.subTest(phase=name):
                self.assertTrue(any(pattern.fullmatch(name) for pattern in written), f"no phase call writes {name}")

    def doctored(self, change):
        """A copy of the recorded run whose manifest lines pass through `change`."""
        folder = tempfile.mkdtemp(prefix="lab-doctored-")
        self.addCleanup(shutil.rmtree, folder)
        shutil.copytree(self.folder, folder, dirs_exist_ok=True)
        manifest = os.path.join(folder, labframe.MANIFEST)
        with open(manifest) as recorded:
            entries = [json.loads(line) for line in recorded]
        with open(manifest, "w") as out:
            for entry in change(entries):
                out.write(json.dumps(entry) + "\n")
        return folder


class ReplayedLabRun(Replay):
    ARCHIVE = "bt5-run.tar.xz"

    @classmethod
    def setUpClass(cls):
        if not os.access(ENCTL, os.X_OK):
            raise AssertionError(f"no enctl at {ENCTL}: build it (swift build --product enctl) or set ENCTL")
        super().setUpClass()

    def failing(self, folder):
        return super().failing(report.checks(), RecordingLab(folder))

    def test_the_recorded_run_passes_every_check(self):
        self.assertEqual(self.failing(self.folder), set())

    def test_an_agent_back_late_after_its_restart_fails_only_no_gap(self):
        def restarted_earlier(entries):
            for entry in entries:
                if entry["phase"] == "a-restarted":
                    entry["realtime"] -= bounds.BACK_WITHIN + 1
            return entries
        self.assertEqual(self.failing(self.doctored(restarted_earlier)), {"no-gap"})

    def test_a_status_poll_reading_the_old_status_late_fails_only_connectable(self):
        def late_poll(entries):
            poll = next(entry for entry in entries if entry["phase"] == "connectable-poll")
            turned = poll["started"]
            late = dict(poll, started=turned + bounds.CONNECTABLE_STATUS_WITHIN + 1, said="active yes")
            return [late if entry is poll else entry for entry in entries] + [poll]
        self.assertEqual(self.failing(self.doctored(late_poll)), {"connectable"})

    def test_the_report_gates_as_the_makefile_expects(self):
        passed = subprocess.run([sys.executable, os.path.join(HERE, "report.py"), self.folder, ENCTL, "--check"], capture_output=True, text=True)
        self.assertEqual((passed.returncode, passed.stdout.splitlines()[-1]), (0, "lab-test: PASS"))
        broken = self.doctored(lambda entries: entries + [{"phase": "failed", "realtime": 0, "monotonic": 0, "step": "a doctored step: exit 1"}])
        alone = subprocess.run([sys.executable, os.path.join(HERE, "report.py"), broken, ENCTL, "--check", "steps"], capture_output=True, text=True)
        self.assertEqual(alone.returncode, 1)
        self.assertNotIn("RECOVERY", alone.stdout)

    def test_every_phase_the_checks_read_is_written_by_the_shell(self):
        lab = RecordingLab(self.folder)
        super().failing(report.checks(), lab)
        self.assertWritten(lab.asked | {entry["phase"] for entry in lab.manifest})


class ReplayedSoak(Replay):
    ARCHIVE = "soak-run.tar.xz"

    def failing(self, folder):
        return super().failing(soak_report.checks(), labframe.Lab(folder))

    def test_the_recorded_soak_passes_every_check(self):
        self.assertEqual(self.failing(self.folder), set())

    def test_a_recovery_after_bluetoothd_is_timed_from_its_offer(self):
        lab = labframe.Lab(self.folder)
        restarts = [fault for fault in lab.entries("fault") if fault["kind"] == "bluetoothd"]
        self.assertTrue(restarts)
        for fault in restarts:
            offered = soak_report.onair.offered(lab.snoop, 0, fault["at"])
            self.assertEqual(soak_report.recovery(lab, fault), soak_report.onair.on_again(lab.snoop, 0, offered, since=fault["at"]))
            self.assertLess(soak_report.recovery(lab, fault), soak_report.onair.on_again(lab.snoop, 0, fault["at"]))

    def test_a_recovery_after_a_sigkill_is_timed_from_the_new_process(self):
        # The recorded soak's first restart ran 9.4 s after the kill on a loaded host, and was on
        # the air 3.4 s after that: without its log's start line, timed from the kill, it fails.
        lab = labframe.Lab(self.folder)
        kills = [fault for fault in lab.entries("fault") if fault["kind"] == "enagentd"]
        self.assertTrue(kills)
        for fault in kills:
            started = soak_report.onair.process_start(lab, "a", fault["at"])
            self.assertGreater(started, fault["at"])
            self.assertEqual(soak_report.recovery(lab, fault), soak_report.onair.on_again(lab.snoop, 0, started, since=fault["at"]))
        folder = self.doctored(lambda entries: entries)
        log = pathlib.Path(folder, "a", "enagentd.log")
        log.write_text("".join(line for line in log.read_text().splitlines(keepends=True) if "enagentd started" not in line))
        self.assertEqual(self.failing(folder), {"faults"})

    def test_an_agent_that_did_not_stop_cleanly_fails_only_faults(self):
        def unclean(entries):
            return [dict(entry, b=1) if entry["phase"] == "exits" else entry for entry in entries]
        self.assertEqual(self.failing(self.doctored(unclean)), {"faults"})

    def test_every_phase_in_the_soak_manifest_is_written_by_the_shell(self):
        self.assertWritten({entry["phase"] for entry in labframe.Lab(self.folder).manifest})


class ReplayedService(Replay):
    """testdata/service-run.tar.xz: a make lab-service run (amd64, BT 5 controllers, cockpit-enagent
    given) that passed every check, trimmed to what service-report.py reads."""
    ARCHIVE = "service-run.tar.xz"

    def failing(self, folder):
        return super().failing(service_report.checks(), labframe.Lab(folder))

    def doctored_phase(self, name, **values):
        """A copy whose phase NAME has VALUES instead."""
        return self.doctored(lambda entries: [dict(entry, **values) if entry["phase"] == name else entry for entry in entries])

    def test_the_recorded_run_passes_every_check(self):
        self.assertEqual(self.failing(self.folder), set())

    def test_a_restart_on_the_air_past_its_bound_fails_only_kill_restart(self):
        back = labframe.Lab(self.folder).phase("kill-restart")["back"]
        self.assertEqual(self.failing(self.doctored_phase("kill-restart", back="10.7 " + back.split(" ", 1)[1])), {"kill-restart"})

    def test_a_clock_step_acted_on_a_minute_late_fails_only_clock_forward(self):
        back = labframe.Lab(self.folder).phase("clock-forward")["back"]
        self.assertEqual(self.failing(self.doctored_phase("clock-forward", back="50.3 " + back.split(" ", 1)[1])), {"clock-forward"})

    def test_a_service_ended_otherwise_than_by_the_watchdog_fails_only_watchdog_restart(self):
        self.assertEqual(self.failing(self.doctored_phase("watchdog-restart", ended_by="Failed with result 'signal'")), {"watchdog-restart"})

    def test_a_key_in_the_journal_fails_only_journal_no_keys(self):
        folder = self.doctored(lambda entries: entries)
        lab = labframe.Lab(folder)
        key = service_report.snapshot(lab, lab.phase("journal-no-keys")["keys"])["keys"][0][2]
        with open(lab.path(lab.phase("journal-no-keys")["journal"]), "ab") as journal:
            journal.write(f"MESSAGE=derived {key.upper()}\n\n".encode())
        self.assertEqual(self.failing(folder), {"journal-no-keys"})


class ServiceChecks(unittest.TestCase):
    """The service lab's checks, judged by service-report.py on what checks.sh records with
    manifest.sh's phase, read back."""

    def run_in_shell(self, script):
        folder = tempfile.mkdtemp(prefix="lab-service-")
        self.addCleanup(shutil.rmtree, folder)
        subprocess.run(["sh", "-c", f'OUT="{folder}"; . "{HERE}/manifest.sh"; {script}'], check=True)
        return folder

    def report(self, folder, *arguments):
        return subprocess.run([sys.executable, os.path.join(HERE, "service-report.py"), folder, *arguments], capture_output=True, text=True)

    def test_the_phase_helper_writes_json_whatever_the_value(self):
        folder = self.run_in_shell(r"""phase check name=a verdict=ok detail='said "no" \ and
went on'; phase figure text= number:=1.5 status:='{"status":
 "active"}' failed:=""")
        check, figure = labframe.Lab(folder).manifest
        self.assertEqual(check["detail"], 'said "no" \\ and went on')
        self.assertEqual((figure["text"], figure["number"], figure["status"], figure["failed"]), ("", 1.5, {"status": "active"}, None))
        self.assertIsInstance(check["realtime"], float)

    def test_a_failed_check_fails_the_service_report_alone(self):
        folder = self.run_in_shell('phase boot state=running failed=0 dbus=active bluetooth=active; phase adapters powered="true false"; phase done')
        held = self.report(folder, "--check", "boot")
        self.assertEqual((held.returncode, held.stdout.splitlines()[0]),
                         (0, "ok boot: systemd is running, 0 units failed; dbus active, bluetooth active"))
        failed = self.report(folder, "--check", "adapters")
        self.assertEqual(failed.returncode, 1)
        self.assertIn("FAILED adapters: bluetoothd offers hci0 and hci1, powered (AutoEnable): true false", failed.stdout)
        every = self.report(folder, "--check")
        self.assertEqual((every.returncode, every.stdout.splitlines()[-1]), (1, "service checks: FAIL"))

    def test_a_check_the_guest_did_not_record_fails(self):
        folder = self.run_in_shell('phase watchdog-kept before=x.json; phase done')
        failed = self.report(folder, "--check", "kill-restart", "watchdog-kept")
        self.assertEqual(failed.returncode, 1)
        self.assertIn("FAILED kill-restart: could not be checked (LookupError: no phase kill-restart in phases.jsonl)", failed.stdout)
        self.assertIn("FAILED watchdog-kept: could not be checked (FileNotFoundError", failed.stdout)

    def test_the_steps_a_lab_skips_are_not_judged_and_once_begun_are(self):
        skipped = self.run_in_shell("phase beacon extended=no; phase done")
        self.assertEqual(self.report(skipped, "--check", "kill-own-instance", "cockpit-page").returncode, 0)
        begun = self.run_in_shell('phase cockpit; phase cockpit-install command="dpkg -i" rc=0 package="cockpit-enagent 0.6.0: install ok installed"; phase done')
        self.assertEqual(self.report(begun, "--check", "cockpit-install").returncode, 0)
        failed = self.report(begun, "--check", "cockpit-page")
        self.assertEqual(failed.returncode, 1)
        self.assertIn("FAILED cockpit-page: could not be checked", failed.stdout)

    def test_a_bound_of_the_guest_s_radio_and_clock(self):
        folder = self.run_in_shell('phase kill-restart killed=10 pid=12 restarts=1 back="10.1 aa:bb 00ff"; '
                                   'phase security unit=enagentd.service exposure=2.1; phase security unit=enagent-detect.service exposure=1.9; phase done')
        self.assertIn("FAILED kill-restart: restarted by systemd (pid 10 -> 12, NRestarts 1); hci0 advertising a new RPI from a new address "
                      "10.1 s after the kill (at most 10)", self.report(folder, "--check", "kill-restart").stdout)
        self.assertEqual(self.report(folder, "--check", "security-enagentd.service").returncode, 1)
        self.assertEqual(self.report(folder, "--check", "security-enagent-detect.service").returncode, 0)

    def test_checks_that_did_not_finish_fail(self):
        folder = self.run_in_shell("phase boot state=running failed=0 dbus=active bluetooth=active")
        self.assertIn("did not finish", self.report(folder, "--check").stdout)

    def test_every_check_reads_a_phase_checks_sh_records_and_every_figure_it_leaves_is_worded(self):
        names = {"security" if check.name.startswith("security-") else check.name for check in service_report.checks()} - {"finished"}
        written = written_phases()
        for name in sorted(names | {"beacon", "cockpit"}):
            with self.subTest(phase=name):
                self.assertTrue(any(pattern.fullmatch(name) for pattern in written), f"no phase call writes {name}")
        with open(os.path.join(HERE, "systemd/checks.sh")) as script:
            self.assertEqual(set(re.findall(r"^\s*figure about=([\w-]+)", script.read(), re.M)), set(service_report.figures()))


def written_phases():
    """The phase names the lab's scripts write, as patterns ($agent and the like match a word)."""
    patterns = set()
    for path in glob.glob(os.path.join(HERE, "**/*.sh"), recursive=True):
        for name in re.findall(r"(?:^|[;&|(]|then|do)\s*(?:phase|record) ([\w$-]+)", pathlib.Path(path).read_text(), re.M):
            patterns.add(re.compile(re.sub(r"\\\$\w+", r"\\w+", re.escape(name))))
    for path in glob.glob(os.path.join(HERE, "*.py")):
        patterns |= {re.compile(re.escape(name)) for name in re.findall(r'"phase": "([\w-]+)"', pathlib.Path(path).read_text())}
    return patterns


if __name__ == "__main__":
    unittest.main()
