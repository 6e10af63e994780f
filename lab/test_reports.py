"""The lab's reports replayed on a recorded run (python3 -m unittest discover -s lab; make lab-report-test).

testdata/bt5-run.tar.xz is a run of make lab-test's bt5 kind that passed every check, trimmed to
what the checks read (btmon's capture of the agents' two controllers). ENCTL names the enctl to
derive and detect with (the tree's debug build unless set)."""
import contextlib, glob, io, json, os, re, shutil, tarfile, tempfile, unittest
import labframe, report

HERE = os.path.dirname(os.path.abspath(__file__))
ENCTL = os.environ.get("ENCTL") or os.path.join(HERE, "../.build/debug/enctl")


class RecordingLab(report.AgentsLab):
    """Remembers the name of every phase the checks ask for."""

    def __init__(self, folder):
        super().__init__(folder, ENCTL)
        self.asked = set()

    def entries(self, name):
        self.asked.add(name)
        return super().entries(name)


class ReplayedRun(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.access(ENCTL, os.X_OK):
            raise AssertionError(f"no enctl at {ENCTL}: build it (swift build --product enctl) or set ENCTL")
        cls.folder = tempfile.mkdtemp(prefix="lab-replay-")
        with tarfile.open(os.path.join(HERE, "testdata/bt5-run.tar.xz")) as archive:
            archive.extractall(cls.folder, filter="data")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.folder)

    def failing(self, folder):
        """The names of the checks that failed on `folder`, and the lab that ran them."""
        lab = RecordingLab(folder)
        with contextlib.redirect_stdout(io.StringIO()):
            failures = labframe.run_report(report.checks(), lab)
        self.assertEqual(set(failures), {check.name for check in report.checks()}, "every check ran")
        return {name for name, found in failures.items() if found}, lab

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

    def test_the_recorded_run_passes_every_check(self):
        failing, _ = self.failing(self.folder)
        self.assertEqual(failing, set())

    def test_an_agent_back_late_after_its_restart_fails_only_no_gap(self):
        def restarted_earlier(entries):
            for entry in entries:
                if entry["phase"] == "a-restarted":
                    entry["realtime"] -= report.BACK_WITHIN + 1
            return entries
        failing, _ = self.failing(self.doctored(restarted_earlier))
        self.assertEqual(failing, {"no-gap"})

    def test_a_status_poll_reading_the_old_status_late_fails_only_connectable(self):
        def late_poll(entries):
            poll = next(entry for entry in entries if entry["phase"] == "connectable-poll")
            turned = poll["started"]
            late = dict(poll, started=turned + report.CONNECTABLE_STATUS_WITHIN + 1, said="active yes")
            return [late if entry is poll else entry for entry in entries] + [poll]
        failing, _ = self.failing(self.doctored(late_poll))
        self.assertEqual(failing, {"connectable"})

    def test_the_report_gates_as_the_makefile_expects(self):
        import subprocess, sys
        passed = subprocess.run([sys.executable, os.path.join(HERE, "report.py"), self.folder, ENCTL, "--check"], capture_output=True, text=True)
        self.assertEqual((passed.returncode, passed.stdout.splitlines()[-1]), (0, "lab-test: PASS"))
        broken = self.doctored(lambda entries: entries + [{"phase": "failed", "realtime": 0, "monotonic": 0, "step": "a doctored step: exit 1"}])
        alone = subprocess.run([sys.executable, os.path.join(HERE, "report.py"), broken, ENCTL, "--check", "steps"], capture_output=True, text=True)
        self.assertEqual(alone.returncode, 1)
        self.assertNotIn("RECOVERY", alone.stdout)

    def test_every_phase_the_checks_read_is_written_by_the_shell(self):
        written = written_phases()
        _, lab = self.failing(self.folder)
        recorded = {entry["phase"] for entry in lab.manifest}
        for name in sorted(lab.asked | recorded):
            with self.subTest(phase=name):
                self.assertTrue(any(pattern.fullmatch(name) for pattern in written), f"no phase call writes {name}")


def written_phases():
    """The phase names the lab's scripts write, as patterns ($agent and the like match a word)."""
    patterns = set()
    for path in glob.glob(os.path.join(HERE, "*.sh")):
        for name in re.findall(r"(?:^|[;&|(]|then|do)\s*phase ([\w$-]+)", open(path).read(), re.M):
            patterns.add(re.compile(re.sub(r"\\\$\w+", r"\\w+", re.escape(name))))
    for path in glob.glob(os.path.join(HERE, "*.py")):
        patterns |= {re.compile(re.escape(name)) for name in re.findall(r'"phase": "([\w-]+)"', open(path).read())}
    return patterns


if __name__ == "__main__":
    unittest.main()
