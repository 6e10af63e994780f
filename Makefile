# enagent: build, test, benchmark and install.
# `make test` and `make run` install the Debian packages they need first (see scripts/install-deps.sh).

PREFIX ?= /usr/local
DESTDIR ?=
BINDIR ?= $(PREFIX)/bin
SBINDIR ?= $(PREFIX)/sbin
SYSCONFDIR ?= /etc
UNITDIR ?= $(PREFIX)/lib/systemd/system
USERUNITDIR ?= $(PREFIX)/lib/systemd/user
SYSUSERSDIR ?= $(PREFIX)/lib/sysusers.d
TMPFILESDIR ?= $(PREFIX)/lib/tmpfiles.d
# dbus-daemon reads policies and service files from /usr/share only, whatever the prefix.
DBUSDIR ?= /usr/share/dbus-1
MANDIR ?= $(PREFIX)/share/man
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR ?= $(PREFIX)/share/zsh/site-functions
FISHCOMPDIR ?= $(PREFIX)/share/fish/vendor_completions.d
SWIFT ?= swift
# The Swift build directory of release, install, man and deb (another one: SCRATCH=.build-NAME).
SCRATCH ?= .build
# Release binaries carry Swift's runtime and Foundation (--static-swift-stdlib), so they run
# without the toolchain wherever they are installed; no RUNPATH $$ORIGIN (nothing lies beside them)
# and -z now (full RELRO), as Debian's hardening wants.
# SWIFT_SDK=NAME cross-builds with that Swift SDK (from SWIFT_SDKS_PATH): make deb-arm64 does.
SWIFT_SDK ?=
SWIFT_SDKS_PATH ?= /opt/enagent-arm64-sdk
RELEASE = $(SWIFT) build --scratch-path $(SCRATCH) $(if $(SWIFT_SDK),--swift-sdks-path $(SWIFT_SDKS_PATH) --swift-sdk $(SWIFT_SDK)) \
	-c release --static-swift-stdlib --disable-local-rpath -Xlinker -z -Xlinker now
RELEASE_BIN = $(SCRATCH)/release
# Where `make deb` puts the package, and its name (without .deb), for the shell.
DIST ?= dist
DEB_ARCH ?= $$(dpkg-architecture -qDEB_HOST_ARCH)
DEB_NAME = enagent_$$(dpkg-parsechangelog -S Version)_$(DEB_ARCH)
# The Cockpit page's package (Architecture all), beside it.
COCKPIT_DEB = $(DIST)/cockpit-enagent_$$(dpkg-parsechangelog -S Version)_all.deb
RUN_DIR ?= $(CURDIR)/run
# Where `swift build` (debug) and `swift build -c release` put the binaries, for the recipes' shell.
DEBUG_BIN = $$($(SWIFT) build --show-bin-path)

.PHONY: all deps build release test bench fuzz run lab lab-test lab-matrix lab-service lab-arm64 soak install install-files verify-units interface-xml uninstall clean \
	man check-man check-docs bench-arm64 deb deb-arm64 deb-package lint-deb check-footprint test-swift6.0 test-arm64 \
	test-builds test-radio test-cockpit test-cockpit-trixie bench-programs bench-smoke check-figures lab-monitor-race lab-report-test lab-flood \
	lab-rootcanal-crowd

all: build

deps:
	@scripts/install-deps.sh

build: deps
	$(SWIFT) build

release: deps
	$(RELEASE) --product enagentd
	$(RELEASE) --product enctl

# The unit and integration tests, the units, man pages and documents, the figures in docs/ against
# their recorded runs, a short run of the benchmark, the amd64 package with lintian and its Cockpit
# page in Debian 12's Cockpit (the host's) and in Debian 13's (a trixie root's); then two
# chains side by side, each step after the one before: the builds (the tests built by Debian
# trixie's Swift 6.0.3 for arm64 and run under qemu, the arm64 package), niced, then the crowd of
# 300 phones on Google's RootCanal with its faults, on Debian 12's stack with its flood and on
# trixie's (TEST_RC_CROWD_SECONDS of crowd before the faults, TEST_RC_FLOOD_SECONDS of flood after
# them; not niced: it judges the agents' timing), beside the emulated radios (the lab's end-to-end
# test, the package installed and run under systemd, a chaos soak of TEST_SOAK_SECONDS), which
# mostly wait on the guest's clock, then each fuzzer for TEST_FUZZ_SECONDS, niced. Each step's
# output comes whole when it ends (--output-sync).
TEST_FUZZ_SECONDS ?= 10
TEST_SOAK_SECONDS ?= 120
test: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build
	$(MAKE) verify-units
	$(MAKE) check-man
	$(MAKE) check-docs
	$(MAKE) check-figures
	$(MAKE) lab-report-test
	$(MAKE) bench-smoke
	$(MAKE) deb
	$(MAKE) check-footprint
	$(MAKE) test-cockpit
	$(MAKE) test-cockpit-trixie
	$(MAKE) -j2 --output-sync=target test-builds test-radio
# The flood only on Debian 12's stack, whose active discovery stalls under it (trixie's scans passively).
TEST_RC_CROWD_SECONDS ?= 30
TEST_RC_FLOOD_SECONDS ?= 45
# Debian trixie's Swift 6.0.3 builds every target in test-arm64 and runs every test but
# CommandTests there; test-swift6.0 (all of them on amd64) is left out: its 11 minutes of niced
# build made make test's 52 on a loaded host. This chain is the longer one (by 9 minutes on
# 2026-12-01, the service lab 4 minutes shorter since enagentd hears clock steps).
test-builds:
	nice -n 10 $(MAKE) test-arm64
	nice -n 10 $(MAKE) deb-arm64
	$(MAKE) lab-rootcanal-crowd LAB=$(LAB)-rootcanal RC_CROWD_SECONDS=$(TEST_RC_CROWD_SECONDS) RC_FLOOD_SECONDS=$(TEST_RC_FLOOD_SECONDS)
	$(MAKE) lab-rootcanal-crowd LAB=$(LAB)-rootcanal-trixie RC_STACK=trixie RC_CROWD_SECONDS=$(TEST_RC_CROWD_SECONDS) RC_FLOOD_SECONDS=0
test-radio:
	$(MAKE) lab-test
	$(MAKE) lab-service
	$(MAKE) soak SOAK_SECONDS=$(TEST_SOAK_SECONDS)
	nice -n 10 $(MAKE) fuzz FUZZ_SECONDS=$(TEST_FUZZ_SECONDS)

# The same tests built and run with Debian trixie's own Swift 6.0.3 (`swiftlang`, what a Pi owner
# gets from apt), in a trixie root that scripts/trixie-root.sh makes with debootstrap once and
# caches (/var/cache/enagent/trixie-swift6.0, TRIXIE_ROOT=; about 3 GB).
SWIFT60_SCRATCH ?= .build-swift6.0
# A --filter of the tests to run (a regular expression): all by default.
SWIFT60_TESTS ?=
# pkg-config for a cross-build in the root: arm64's .pc files (multiarch), not the host's.
ARM64_ENV = PKG_CONFIG_PATH=/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig
# The arm64 SDK that scripts/arm64-sdk.sh makes, where the trixie root has it.
ARM64_SDK_DIR = /opt/enagent-arm64-sdk
ARM64_SDK = --swift-sdks-path $(ARM64_SDK_DIR) --swift-sdk enagent-arm64
# arm64 programs in the root run under qemu-user (binfmt) on a Cortex-A53, the Pi 3's and Zero 2 W's
# core: qemu's default (every feature, SVE among them) leads OpenSSL to code that it emulates 8
# times slower. The test and bench builds load arm64's Swift runtime from the SDK.
ARM64_RUN = env QEMU_CPU=cortex-a53 LD_LIBRARY_PATH=$(ARM64_SDK_DIR)/runtime/swift/linux
test-swift6.0:
	scripts/trixie-root.sh swift build --build-tests --scratch-path $(SWIFT60_SCRATCH)
	scripts/trixie-root.sh swift test --skip-build --scratch-path $(SWIFT60_SCRATCH) $(if $(SWIFT60_TESTS),--filter '$(SWIFT60_TESTS)')

# The unit tests cross-built for arm64 by that Swift (scripts/arm64-sdk.sh) and run under qemu-user
# (binfmt) in the trixie root: what a Pi's CPU computes, byte for byte (crypto, byte order, the C
# libraries' ABI), on ARM64_RUN's Cortex-A53. Optimised, as under qemu a debug build runs some 20
# times slower than here. CommandTests, which drive whole processes and bound their answers in
# wall-clock time, run on amd64 only.
ARM64_TEST_SCRATCH ?= .build-arm64-tests
test-arm64:
	scripts/arm64-sdk.sh
	scripts/trixie-root.sh env $(ARM64_ENV) swift build -c release -Xswiftc -enable-testing --build-tests \
		--scratch-path $(ARM64_TEST_SCRATCH) $(ARM64_SDK)
	scripts/trixie-root.sh $(ARM64_RUN) \
		$(ARM64_TEST_SCRATCH)/release/enagentPackageTests.xctest --testing-library swift-testing --skip '^CommandTests\.'

# Figures on generated data, against the C/OpenSSL derivation ceiling measured in the same run;
# enbench runs the enctl and enagentd built beside it as the package builds them. The run is
# recorded in docs/figures/bench.json and rendered into docs/performance.md.
bench: bench-programs
	$(RELEASE_BIN)/enbench --json docs/figures/bench.json $(SCRATCH)/bench/derivation-ceiling
	$(RELEASE_BIN)/enbench storage --json docs/figures/storage.json
	scripts/render-figures.py write

# Every measure of make bench on tiny inputs, its JSON rendered, so that neither can rot (make
# test). The release build of make bench and make deb (the same SCRATCH and flags), as it is the
# --static-swift-stdlib build that broke; with enctl and enagentd built, enbench adds seconds.
bench-smoke: bench-programs
	$(RELEASE_BIN)/enbench --smoke --json $(SCRATCH)/bench/bench-smoke.json $(SCRATCH)/bench/derivation-ceiling
	scripts/render-figures.py show $(SCRATCH)/bench/bench-smoke.json > /dev/null
	$(RELEASE_BIN)/enbench storage --smoke --json $(SCRATCH)/bench/storage-smoke.json
	scripts/render-figures.py show $(SCRATCH)/bench/storage-smoke.json > /dev/null

bench-programs: deps
	$(RELEASE) --product enbench
	$(RELEASE) --product enctl
	$(RELEASE) --product enagentd
	mkdir -p $(SCRATCH)/bench
	cc -O2 -Wall -Wno-deprecated-declarations -pthread -o $(SCRATCH)/bench/derivation-ceiling bench/derivation-ceiling.c -lcrypto

# Fails when a rendered figure in docs/ differs from what scripts/render-figures.py writes from
# its recorded run in docs/figures/ (edited by hand, or the JSON changed without rendering).
check-figures:
	scripts/render-figures.py check

# The derivation against the C/OpenSSL ceiling on arm64, both cross-built (enbench by Debian's Swift
# 6.0.3, the C program by the clang that comes with it) and run under qemu-user on a Cortex-A53: a ratio between two
# emulated programs, not a Pi's speed (docs/performance.md, for `make bench` on a Pi).
bench-arm64:
	scripts/arm64-sdk.sh
	scripts/trixie-root.sh env $(ARM64_ENV) swift build -c release --product enbench --scratch-path $(ARM64_TEST_SCRATCH) $(ARM64_SDK)
	mkdir -p $(ARM64_TEST_SCRATCH)/bench
	scripts/trixie-root.sh /usr/libexec/swift/bin/clang --target=aarch64-linux-gnu -fuse-ld=lld -O2 -Wall -Wno-deprecated-declarations -pthread \
		-o $(ARM64_TEST_SCRATCH)/bench/derivation-ceiling bench/derivation-ceiling.c -lcrypto
	scripts/trixie-root.sh $(ARM64_RUN) \
		$(ARM64_TEST_SCRATCH)/release/enbench derivation $(ARM64_TEST_SCRATCH)/bench/derivation-ceiling

# The fuzzers (Fuzz/README.md) under libFuzzer and AddressSanitizer, each for FUZZ_SECONDS (60);
# fails when one crashes, hangs or goes over 256 MB, naming the input.
fuzz: deps
	SWIFT="$(SWIFT)" scripts/fuzz.sh

# The agent in the foreground with its state under ./run, without the radio (a machine
# without Bluetooth has none; the lab below gives it one), its API on a private bus there:
#   DBUS_SYSTEM_BUS_ADDRESS=unix:path=run/bus enctl status
# It builds enctl too, and its hint names that enctl: one on PATH may be another version's.
run: deps
	$(SWIFT) build --product enagentd
	$(SWIFT) build --product enctl
	mkdir -p $(RUN_DIR)
	rm -f $(RUN_DIR)/bus
	dbus-daemon --session --address=unix:path=$(RUN_DIR)/bus --fork --print-pid > $(RUN_DIR)/bus.pid
	# The bus goes with the agent, also on Ctrl-C (which stops the agent cleanly).
	@echo "enagentd's API, from another terminal: DBUS_SYSTEM_BUS_ADDRESS=unix:path=$(RUN_DIR)/bus $(DEBUG_BIN)/enctl status"
	trap 'kill $$(cat $(RUN_DIR)/bus.pid)' EXIT; trap : INT; \
		DBUS_SYSTEM_BUS_ADDRESS=unix:path=$(RUN_DIR)/bus $(DEBUG_BIN)/enagentd --state-dir $(RUN_DIR)/state \
		--no-radio --no-require-synchronised-clock

# The lab: two agents on emulated radios in a qemu guest with a real bluetoothd (lab/), and more
# emulated controllers that play phones and a crowd; on two kinds of controller: BT 5.2 (extended
# advertising, 6 controllers) and BT 4.0 LE-only (legacy commands, as every Raspberry Pi has;
# 9 controllers, since each advertises one set), and on two stacks: Debian 12's (the host's own
# root: kernel 6.1, BlueZ 5.66) and Debian trixie's, which Raspberry Pi OS is (a root made once by
# lab/trixie-guest.sh: kernel 6.12, BlueZ 5.82, and Debian 12's btvirt, whose controllers do not
# crash; the project and the Swift runtime its debug binaries link are shared into the guest, and
# it boots in its own LAB directory, $(LAB)-trixie). A kind is NAME:BTVIRT_OPTIONS:CONTROLLERS[:trixie];
# its records stay in $(LAB)/NAME. make lab-test (and so make test) runs both controller kinds on
# Debian 12 and the Pi's kind on trixie; make lab-matrix every combination.
LAB ?= /tmp/enagent-lab
LAB_SECONDS ?= 40
LAB_KINDS ?= bt5:-l6:6 bt4:-Ll10:10 trixie-bt4:-Ll10:10:trixie
LAB_MATRIX_KINDS = bt5:-l6:6 bt4:-Ll10:10 trixie-bt5:-l6:6:trixie trixie-bt4:-Ll10:10:trixie
# make lab prints what happened; make lab-test also fails unless every check holds on the kinds in
# LAB_GATES.
LAB_GATES ?= bt5 bt4 trixie-bt4
lab lab-test: deps
	$(SWIFT) build --product enagentd
	$(SWIFT) build --product enctl
	set -e; mkdir -p $(LAB); for kind in $(LAB_KINDS); do \
		set -- $$(echo $$kind | tr : ' '); \
		if [ "$${4:-}" = trixie ]; then \
			root=$$(lab/trixie-guest.sh amd64); lab=$(LAB)-trixie; kernel=$$(dirname $$root)/linux-image.deb; \
			shared="$(CURDIR) $$(readelf -d $(DEBUG_BIN)/enagentd | sed -n 's/.*runpath: \[\([^]:]*\).*/\1/p')"; \
		else root=; lab=$(LAB); kernel=; shared=; fi; \
		echo "lab: $$1 controllers (btvirt $$2$${4:+, $$4})"; \
		LAB=$$lab GUEST_ROOT=$$root KERNEL_DEB=$$kernel RW_DIRS="$$shared" NCTRL=$$3 BTVIRT_OPTS=$$2 \
			lab/boot-lab.sh "$(CURDIR)/lab/agents.sh $(DEBUG_BIN) $$lab/out $(LAB_SECONDS)"; \
		rm -rf $(LAB)/$$1; mv $$lab/out $(LAB)/$$1; \
	done
	status=0; for kind in $(LAB_KINDS); do name=$${kind%%:*}; echo "== lab report: $$name controllers"; \
		gate=$$(case " $(LAB_GATES) " in *" $$name "*) echo --check;; esac); \
		/usr/bin/python3 lab/report.py $(LAB)/$$name $(DEBUG_BIN)/enctl $(if $(filter lab-test,$@),$$gate) || status=1; done; exit $$status

# The lab's reports replayed on a recorded run (lab/test_reports.py, lab/testdata/): the same
# verdicts, and a doctored copy failing exactly the check whose bound it breaks. No guest.
lab-report-test:
	$(SWIFT) build --product enctl
	ENCTL=$(DEBUG_BIN)/enctl python3 -m unittest discover -s lab -p 'test_*.py'

# The advertisement monitor's race with a power-off (lab/monitor-race.py): MONITOR_ROUNDS rounds of
# adding a monitor as the adapter goes off (Set Powered or rfkill, 0-3 ms apart) on trixie's kernel,
# where passive scanning is the default, then on Debian 12's, where it is not (that one is reported,
# not gated: its kernel has the race). About 3 minutes each.
MONITOR_ROUNDS ?= 100
lab-monitor-race: deps
	set -e; mkdir -p $(LAB)/monitor-race; status=0; for stack in trixie debian12; do \
		if [ $$stack = trixie ]; then root=$$(lab/trixie-guest.sh amd64); lab=$(LAB)-trixie; kernel=$$(dirname $$root)/linux-image.deb; \
		else root=; lab=$(LAB); kernel=; fi; \
		echo "lab: the monitor race on $$stack"; rm -f $$lab/out/monitor-race.txt; \
		LAB=$$lab GUEST_ROOT=$$root KERNEL_DEB=$$kernel RW_DIRS="$(CURDIR)" NCTRL=1 BTVIRT_OPTS=-l1 \
			lab/boot-lab.sh "/usr/bin/python3 $(CURDIR)/lab/monitor-race.py $$lab/out $(MONITOR_ROUNDS)" || [ $$stack = debian12 ] || status=1; \
		cp $$lab/out/monitor-race.txt $(LAB)/monitor-race/$$stack.txt || status=1; tail -n 1 $(LAB)/monitor-race/$$stack.txt || true; \
	done; exit $$status

# The flood lab (lab/flood.sh, lab/flood-report.py): two agents scanning through bluetoothd's
# discovery on Debian 12's BT 5 controllers while the other four flood the air with fresh advertisers
# for FLOOD_SECONDS, then AFTER_SECONDS of quiet and three phones; gated on every scan running again
# within 30 s of a stall, on no status saying a scan runs that does not, and on the phones heard
# after the flood. About 10 minutes with the guest's boot: not part of make test.
FLOOD_SECONDS ?= 300
FLOOD_AFTER_SECONDS ?= 100
lab-flood: deps
	$(SWIFT) build --product enagentd
	$(SWIFT) build --product enctl
	mkdir -p $(LAB)
	LAB=$(LAB) NCTRL=6 BTVIRT_OPTS=-l6 QEMU_TIMEOUT=$$(( $(FLOOD_SECONDS) + $(FLOOD_AFTER_SECONDS) + 600 )) \
		lab/boot-lab.sh "$(CURDIR)/lab/flood.sh $(DEBUG_BIN) $(LAB)/out $(LAB_SECONDS) $(FLOOD_SECONDS) $(FLOOD_AFTER_SECONDS)"
	rm -rf $(LAB)/flood; mv $(LAB)/out $(LAB)/flood
	/usr/bin/python3 lab/flood-report.py $(LAB)/flood --check

# A crowd on RootCanal (docs/lab.md, "A crowd on RootCanal"): RC_CROWD Bumble phones and the three
# named ones on Google's RootCanal on the host (lab/rootcanal/rclab.py serve), each rotating every
# RC_ROTATE seconds on its own; the lab's two agents in the Debian 12 guest on two RootCanal
# controllers (two virtio consoles, btattach: hci0 and hci1, no btvirt) for RC_CROWD_SECONDS,
# then RC_FLOOD_SECONDS of a flood (every phone rotating every RC_FLOOD_ROTATE seconds);
# gated on the (scan, advertiser) pairs each agent recorded (lab/rootcanal/crowd-report.py), judged
# on RootCanal's own record of the agents' controllers (lab/rootcanal/hcisniffer.py), so the guest
# does not wait for btmon's tail (BTMON_DRAIN=5: it needs only the controllers' addresses). About
# 4 minutes and 1.7 cores with the guest's boot on an idle host; make test runs it beside the
# soak, in a LAB of its own. The agents are the release build, as installed (RC_BIN: another build's folder); under TCG a debug build's
# two agents took half the guest's processors among 300 phones (docs/lab.md has the runs).
RC_CROWD ?= 300
RC_ROTATE ?= 10-20
RC_CROWD_SECONDS ?= 120
# Then a flood: every phone rotating every RC_FLOOD_ROTATE seconds for RC_FLOOD_SECONDS (0: none).
RC_FLOOD_SECONDS ?= 60
RC_FLOOD_ROTATE ?= 4-8
RC_BIN ?= $(CURDIR)/$(RELEASE_BIN)
# RC_STACK=trixie: the guest on Debian trixie's stack, which Raspberry Pi OS is (lab/trixie-guest.sh's
# root, as make lab-test's trixie kinds: kernel 6.12, BlueZ 5.82; the agents then scan passively).
# RootCanal itself runs on the host with that root's libc (lab/rootcanal/rootcanal.sh): made once, cached.
RC_STACK ?= debian12
lab-rootcanal-crowd: release
	mkdir -p $(LAB)
	root=$$(lab/trixie-guest.sh amd64); \
	if [ "$(RC_STACK)" = trixie ]; then export GUEST_ROOT=$$root KERNEL_DEB=$$(dirname $$root)/linux-image.deb RW_DIRS="$(CURDIR)"; fi; \
	LAB=$(LAB) CROWD=$(RC_CROWD) ROTATE=$(RC_ROTATE) FLOOD_AFTER=flood-started FLOOD_ROTATE=$(RC_FLOOD_ROTATE) RC_PORTS=2 NCTRL=0 \
		LEAVE_AFTER=crowd-ended QEMU_TIMEOUT=$$(( $(RC_CROWD_SECONDS) + $(RC_FLOOD_SECONDS) + 900 )) BTMON_DRAIN=5 \
		lab/rootcanal/guest.sh "$(CURDIR)/lab/rootcanal/crowd-agents.sh $(RC_BIN) $(LAB)/out $(RC_CROWD_SECONDS) $(RC_FLOOD_SECONDS)"; guest=$$?; \
	rm -rf $(LAB)/rootcanal-crowd; mv $(LAB)/out $(LAB)/rootcanal-crowd; cp $(LAB)/rootcanal/phones.jsonl $(LAB)/serve.log $(LAB)/rootcanal-crowd/; \
	/usr/bin/python3 lab/rootcanal/hcisniffer.py $(LAB)/rootcanal/hci $(LAB)/rootcanal-crowd/btmon.snoop $(LAB)/rootcanal-crowd/host.snoop && \
	/usr/bin/python3 lab/rootcanal/crowd-report.py $(LAB)/rootcanal-crowd $(RC_BIN)/enctl --check && exit $$guest

lab-matrix:
	$(MAKE) lab-test LAB_KINDS="$(LAB_MATRIX_KINDS)" LAB_GATES="$(foreach kind,$(LAB_MATRIX_KINDS),$(firstword $(subst :, ,$(kind))))"

# The packages that `make deb` built, installed with dpkg -i in the lab's guest booted with systemd
# as PID 1 (Debian's dbus and bluetooth services, the Swift toolchain hidden), then run and
# checked with the README's commands (lab/service-lab.sh, lab/systemd/checks.sh); cockpit-enagent
# too, with cockpit.socket started and a member's login over TLS on port 9090 (the guest's Cockpit
# is the host's cockpit-ws and cockpit-bridge, installed here). About 10 minutes under TCG (586 s
# on 2026-12-01; 11 to 15 before enagentd heard clock steps at once).
lab-service: deps
	@scripts/install-deps.sh cockpit-ws cockpit-bridge curl openssl
	LAB=$(LAB) SWIFT=$(SWIFT) lab/service-lab.sh $(DIST)/$(DEB_NAME).deb $(COCKPIT_DEB)

# The same on arm64: the package of make deb-arm64 installed with apt in a Debian trixie arm64
# guest (lab/trixie-guest.sh arm64: debootstrap once, cached in /var/cache/enagent/trixie-arm64-guest, with
# every Depends already in it: the guest has no network), booted by qemu-system-aarch64 (TCG, a
# Cortex-A53 as in a Pi 3) with Debian's arm64 kernel, on BT 4.x LE-only controllers as most Pis have.
LAB_ARM64 ?= /tmp/enagent-lab-arm64
lab-arm64: deps
	root=$$(lab/trixie-guest.sh arm64) && LAB=$(LAB_ARM64) ARCH=arm64 GUEST_ROOT=$$root KERNEL_DEB=$$(dirname $$root)/linux-image.deb \
		KERNEL_MODULES=$$(dirname $$root)/hci_vhci.ko \
		BTVIRT_OPTS=-Ll2 INSTALL="apt-get install -y" QEMU_TIMEOUT=$${QEMU_TIMEOUT:-2400} \
		lab/service-lab.sh $(DIST)/enagent_$$(dpkg-parsechangelog -S Version)_arm64.deb

# The chaos soak (lab/soak.sh, lab/soak-report.py): SOAK_SECONDS (600) of SIGKILLs of enagentd and
# bluetoothd and adapter power cycles under agent a, then its invariants; with the guest's boot about
# 13 minutes (make test runs a short one).
SOAK_SECONDS ?= 600
soak: deps
	$(SWIFT) build --product enagentd
	$(SWIFT) build --product enctl
	LAB=$(LAB) NCTRL=2 BTVIRT_OPTS=-l2 QEMU_TIMEOUT=$$(( $(SOAK_SECONDS) + 400 )) \
		lab/boot-lab.sh "$(CURDIR)/lab/soak.sh $(DEBUG_BIN) $(LAB)/out $(SOAK_SECONDS)"
	/usr/bin/python3 lab/soak-report.py $(LAB)/out --check

# Everything but the binaries: units, bus policy, users, configuration. The configuration files
# are the administrator's: installed only where there are none. key-server.conf will hold an API
# key: 0640, its group enagent (`install` sets it on a live system, the package's postinst with
# dpkg-statoverride).
install-files:
	install -d $(DESTDIR)$(UNITDIR) $(DESTDIR)$(USERUNITDIR) $(DESTDIR)$(SYSUSERSDIR) $(DESTDIR)$(TMPFILESDIR) \
		$(DESTDIR)$(DBUSDIR)/system.d $(DESTDIR)$(DBUSDIR)/interfaces
	for unit in enagentd.service enagent-detect.service enagent-detect.timer; do \
		sed -e 's|@SBINDIR@|$(SBINDIR)|g' -e 's|@BINDIR@|$(BINDIR)|g' systemd/$$unit > $(DESTDIR)$(UNITDIR)/$$unit; \
		chmod 0644 $(DESTDIR)$(UNITDIR)/$$unit; done
	sed -e 's|@BINDIR@|$(BINDIR)|g' systemd/user/enagent-notify.service > $(DESTDIR)$(USERUNITDIR)/enagent-notify.service
	install -m 0644 systemd/enagent.sysusers $(DESTDIR)$(SYSUSERSDIR)/enagent.conf
	install -m 0644 systemd/enagent.tmpfiles $(DESTDIR)$(TMPFILESDIR)/enagent.conf
	install -m 0644 dbus/org.enagent.ExposureNotification1.conf $(DESTDIR)$(DBUSDIR)/system.d/
	install -m 0644 dbus/org.enagent.ExposureNotification1.xml $(DESTDIR)$(DBUSDIR)/interfaces/
	[ -e $(DESTDIR)$(SYSCONFDIR)/enagent/enagent.conf ] || install -D -m 0644 etc/enagent.conf $(DESTDIR)$(SYSCONFDIR)/enagent/enagent.conf
	[ -e $(DESTDIR)$(SYSCONFDIR)/enagent/key-server.conf ] || install -D -m 0640 etc/key-server.conf $(DESTDIR)$(SYSCONFDIR)/enagent/key-server.conf
	install -d -m 0755 $(DESTDIR)$(SYSCONFDIR)/enagent/trusted-keys $(DESTDIR)$(SYSCONFDIR)/enagent/trusted-issuers
	install -d $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man8
	install -m 0644 man/enctl.1 $(DESTDIR)$(MANDIR)/man1/
	install -m 0644 man/enagent.conf.5 man/key-server.conf.5 $(DESTDIR)$(MANDIR)/man5/
	install -m 0644 man/enagentd.8 $(DESTDIR)$(MANDIR)/man8/

# Installs what `make release` built and builds nothing: `sudo make install` would run swift as
# root, and sudo's PATH has none. The bash completion loses its #! line: bash sources it (lintian).
# On the live system (no DESTDIR) it also creates the user and tells systemd and dbus.
install:
	@for binary in enagentd enctl; do [ -x $(RELEASE_BIN)/$$binary ] || { \
		echo "make install: $(RELEASE_BIN)/$$binary is missing: run \`make release\` first as your user" >&2; exit 1; }; done
	$(MAKE) --no-print-directory install-files
	install -d $(DESTDIR)$(SBINDIR) $(DESTDIR)$(BINDIR)
	install -m 0755 $(RELEASE_BIN)/enagentd $(DESTDIR)$(SBINDIR)/enagentd
	install -m 0755 $(RELEASE_BIN)/enctl $(DESTDIR)$(BINDIR)/enctl
	install -d $(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(ZSHCOMPDIR) $(DESTDIR)$(FISHCOMPDIR)
	$(RELEASE_BIN)/enctl --generate-completion-script bash | sed '1{/^#!/d}' > $(DESTDIR)$(BASHCOMPDIR)/enctl
	$(RELEASE_BIN)/enctl --generate-completion-script zsh > $(DESTDIR)$(ZSHCOMPDIR)/_enctl
	$(RELEASE_BIN)/enctl --generate-completion-script fish > $(DESTDIR)$(FISHCOMPDIR)/enctl.fish
	if [ -z "$(DESTDIR)" ] && [ -d /run/systemd/system ]; then \
		systemd-sysusers $(SYSUSERSDIR)/enagent.conf && systemd-tmpfiles --create $(TMPFILESDIR)/enagent.conf && \
		{ [ "$$(stat -c %g $(SYSCONFDIR)/enagent/key-server.conf)" != 0 ] || chgrp enagent $(SYSCONFDIR)/enagent/key-server.conf; } && \
		systemctl daemon-reload && systemctl reload dbus; fi

# Regenerates the committed man pages enctl(1) and enagentd(8) from the commands' own help, with
# swift-argument-parser's GenerateManual plugin (after a change to an option or a help text;
# `make test` fails while they are stale). enagent.conf(5) and key-server.conf(5) are written by hand.
# The packages in $(DIST) (make deb builds them when they are missing; after a change, make deb
# again: the test fails when the package's page is not the tree's), installed with README's apt
# commands in namespaces of the test's own (overlays on /etc, /usr and /var: nothing reaches the
# host), the installed enagentd without a radio, and Cockpit as its units run it (TLS, port 9090);
# Debian's chromium, headless, logs in at https://127.0.0.1:9090 as a member of the group enagent
# and as another user (cockpit/browser-test.py). Its screenshots go to $(SCRATCH)/cockpit-screenshots.
# What the packages depend on is installed on the host first (the namespace has no network), and
# `cockpit` without its Recommends, as README's command installs it.
test-cockpit:
	@scripts/install-deps.sh cockpit cockpit-ws cockpit-bridge bluez chromium python3-websocket openssl curl iproute2 passwd
	@if [ ! -f $(DIST)/$(DEB_NAME).deb ] || [ ! -f $(COCKPIT_DEB) ]; then \
		echo "make test-cockpit: no $(DIST)/$(DEB_NAME).deb or $(COCKPIT_DEB): building them (make deb)" >&2; \
		$(MAKE) --no-print-directory deb; fi
	/usr/bin/python3 cockpit/browser-test.py $(DIST)/$(DEB_NAME).deb $(COCKPIT_DEB) $(SCRATCH)/cockpit-screenshots

# The same test against Debian 13's own Cockpit (337, what Raspberry Pi OS gets from apt), with the
# same amd64 packages, in a trixie root that scripts/trixie-cockpit-root.sh makes with debootstrap
# once and caches (/var/cache/enagent/trixie-cockpit, TRIXIE_COCKPIT_ROOT=; about 1.1 GB: Cockpit,
# chromium and what the packages depend on). Its screenshots go to $(SCRATCH)/cockpit-screenshots-trixie.
test-cockpit-trixie:
	@if [ ! -f $(DIST)/$(DEB_NAME).deb ] || [ ! -f $(COCKPIT_DEB) ]; then \
		echo "make test-cockpit-trixie: no $(DIST)/$(DEB_NAME).deb or $(COCKPIT_DEB): building them (make deb)" >&2; \
		$(MAKE) --no-print-directory deb; fi
	scripts/trixie-cockpit-root.sh /usr/bin/python3 cockpit/browser-test.py $(DIST)/$(DEB_NAME).deb $(COCKPIT_DEB) $(SCRATCH)/cockpit-screenshots-trixie

man: deps
	SWIFT=$(SWIFT) scripts/generate-man.sh man $(SCRATCH)

# Fails when a page does not render cleanly or enctl.1 or enagentd.8 is stale (make test runs it).
check-man:
	@scripts/install-deps.sh man-db
	SWIFT=$(SWIFT) scripts/check-man.sh $(SCRATCH)

# The documents' relative links and headings, README's length, dates and table of statuses
# against the code (scripts/check-docs.py names each problem's file and line).
check-docs:
	python3 scripts/check-docs.py

# The Debian packages, $(DIST)/enagent_VERSION_ARCH.deb and cockpit-enagent_VERSION_all.deb, with
# dpkg-buildpackage and debhelper from debian/ (debian/rules says why), then lintian on them. The
# Swift toolchain must be on PATH.
deb: deps
	@scripts/install-deps.sh debhelper dpkg-dev lintian man-db
	$(MAKE) --no-print-directory deb-package
	$(MAKE) --no-print-directory lint-deb

# The arm64 package (a Raspberry Pi's), cross-built on this host by Debian trixie's Swift 6.0.3 in
# the trixie root, against Debian's own arm64 libraries (scripts/arm64-sdk.sh makes the SDK), so
# that dpkg-shlibdeps reads its Depends from arm64's libraries; then lintian and the footprint
# check, as for amd64's.
ARM64_SCRATCH ?= .build-arm64
deb-arm64:
	@scripts/install-deps.sh lintian
	scripts/arm64-sdk.sh
	scripts/trixie-root.sh env $(ARM64_ENV) make --no-print-directory deb-package \
		SWIFT_SDK=enagent-arm64 SWIFT_SDKS_PATH=$(ARM64_SDK_DIR) SCRATCH=$(ARM64_SCRATCH) DEB_ARCH=arm64 DPKG_BUILDPACKAGE_FLAGS="--host-arch arm64 --no-check-builddeps"
	$(MAKE) --no-print-directory lint-deb check-footprint DEB_ARCH=arm64
	@# The packaged binaries start on arm64 (qemu-user, the Pi 3's core) with Debian trixie's libraries.
	scripts/trixie-root.sh $(ARM64_RUN) sh -c 'dpkg-deb -x "$$1" /tmp/package && \
		/tmp/package/usr/bin/enctl --help | head -1 && /tmp/package/usr/sbin/enagentd --help | head -1' - \
		$(DIST)/enagent_$$(dpkg-parsechangelog -S Version)_arm64.deb

deb-package:
	@command -v $(SWIFT) > /dev/null || { echo "make deb: no $(SWIFT) on PATH" >&2; exit 1; }
	@version=$$(sed -n 's/.*static let packageVersion = "\(.*\)"/\1/p' Sources/ENAPI/ExposureNotificationAPI.swift); \
		[ "$$version" = "$$(dpkg-parsechangelog -S Version)" ] || { \
		echo "make deb: debian/changelog is at $$(dpkg-parsechangelog -S Version), enagentd at $$version: add a changelog entry" >&2; exit 1; }
	mkdir -p $(DIST)
	SCRATCH=$(SCRATCH) DIST=$(DIST) SWIFT_SDK=$(SWIFT_SDK) dpkg-buildpackage -b --no-sign $(DPKG_BUILDPACKAGE_FLAGS) \
		--buildinfo-option=-u$(DIST) --changes-option=-u$(DIST) \
		--buildinfo-file=$(DIST)/$(DEB_NAME).buildinfo --changes-file=$(DIST)/$(DEB_NAME).changes

lint-deb:
	scripts/lint-deb.sh $(DIST)/$(DEB_NAME).deb
	scripts/lint-deb.sh $(COCKPIT_DEB)

# The package's and its binaries' sizes against the footprint goals, and no ICU data in them;
# FIGURES=write records them in docs/figures/ (then scripts/render-figures.py write).
FIGURES ?=
check-footprint:
	FIGURES=$(FIGURES) scripts/check-footprint.sh $(DIST)/$(DEB_NAME).deb

# Rewrites dbus/org.enagent.ExposureNotification1.xml from what enagentd serves (after an API change).
interface-xml:
	$(SWIFT) build --product enagentd
	scripts/interface-xml.sh $(DEBUG_BIN)

# systemd-analyze verify on the installed units (with the debug binaries), as `make test` does.
verify-units:
	@scripts/install-deps.sh man-db
	scripts/verify-units.sh $(DEBUG_BIN)

uninstall:
	rm -f $(DESTDIR)$(SBINDIR)/enagentd $(DESTDIR)$(BINDIR)/enctl
	rm -f $(DESTDIR)$(BASHCOMPDIR)/enctl $(DESTDIR)$(ZSHCOMPDIR)/_enctl $(DESTDIR)$(FISHCOMPDIR)/enctl.fish
	rm -f $(DESTDIR)$(MANDIR)/man1/enctl.1 $(DESTDIR)$(MANDIR)/man5/enagent.conf.5 $(DESTDIR)$(MANDIR)/man5/key-server.conf.5 \
		$(DESTDIR)$(MANDIR)/man8/enagentd.8
	rm -f $(DESTDIR)$(UNITDIR)/enagentd.service $(DESTDIR)$(UNITDIR)/enagent-detect.service $(DESTDIR)$(UNITDIR)/enagent-detect.timer
	rm -f $(DESTDIR)$(USERUNITDIR)/enagent-notify.service $(DESTDIR)$(SYSUSERSDIR)/enagent.conf $(DESTDIR)$(TMPFILESDIR)/enagent.conf
	rm -f $(DESTDIR)$(DBUSDIR)/system.d/org.enagent.ExposureNotification1.conf \
		$(DESTDIR)$(DBUSDIR)/system-services/org.enagent.ExposureNotification1.service \
		$(DESTDIR)$(DBUSDIR)/interfaces/org.enagent.ExposureNotification1.xml

clean:
	$(SWIFT) package clean
	rm -rf .build $(RUN_DIR) $(DIST)
