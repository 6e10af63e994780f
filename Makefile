# enagent: build, test, benchmark and install.
# `make test` and `make run` install the Debian packages they need first (see scripts/install-deps.sh).

PREFIX ?= /usr/local
DESTDIR ?=
BINDIR ?= $(PREFIX)/bin
SBINDIR ?= $(PREFIX)/sbin
SYSCONFDIR ?= /etc
SWIFT ?= swift
RUN_DIR ?= $(CURDIR)/run

.PHONY: all deps build release test bench run lab lab-test install uninstall clean proto

all: build

deps:
	@scripts/install-deps.sh

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release --product enagentd
	$(SWIFT) build -c release --product enctl

# The unit and integration tests, then the lab's end-to-end test on emulated radios.
test: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build
	$(MAKE) lab-test

bench: deps
	$(SWIFT) build -c release --product enbench
	$$($(SWIFT) build -c release --show-bin-path)/enbench

# The agent in the foreground with its state under ./run, without the radio (a machine
# without Bluetooth has none; the lab below gives it one).
run: deps
	$(SWIFT) build --product enagentd
	$$($(SWIFT) build --show-bin-path)/enagentd --state-dir $(RUN_DIR)/state --no-radio

# The lab: two agents on emulated radios in a qemu guest with a real bluetoothd (lab/).
LAB ?= /tmp/enagent-lab
LAB_SECONDS ?= 40
# make lab prints what happened; make lab-test also fails unless every check holds.
lab lab-test: deps
	$(SWIFT) build --product enagentd
	$(SWIFT) build --product enctl
	LAB=$(LAB) lab/boot-lab.sh "$(CURDIR)/lab/agents.sh $$($(SWIFT) build --show-bin-path) $(LAB)/out $(LAB_SECONDS)"
	python3 lab/report.py $(LAB)/out $$($(SWIFT) build --show-bin-path)/enctl $(if $(filter lab-test,$@),--check)

# Regenerates the committed Swift for the key export protobuf (only after editing the .proto).
PROTO_DIR = Sources/ENKeyFiles/Proto
proto:
	@scripts/install-deps.sh protobuf-compiler
	$(SWIFT) build -c release --product protoc-gen-swift
	protoc --plugin=protoc-gen-swift=$$($(SWIFT) build -c release --show-bin-path)/protoc-gen-swift \
		--swift_opt=Visibility=Internal --swift_out=Sources/ENKeyFiles/Generated -I $(PROTO_DIR) $(PROTO_DIR)/export.proto

# The configuration file is the administrator's: installed only where there is none.
install: release
	install -d $(DESTDIR)$(SBINDIR) $(DESTDIR)$(BINDIR)
	install -m 0755 $$($(SWIFT) build -c release --show-bin-path)/enagentd $(DESTDIR)$(SBINDIR)/enagentd
	install -m 0755 $$($(SWIFT) build -c release --show-bin-path)/enctl $(DESTDIR)$(BINDIR)/enctl
	[ -e $(DESTDIR)$(SYSCONFDIR)/enagent/enagent.conf ] || install -D -m 0644 etc/enagent.conf $(DESTDIR)$(SYSCONFDIR)/enagent/enagent.conf

uninstall:
	rm -f $(DESTDIR)$(SBINDIR)/enagentd $(DESTDIR)$(BINDIR)/enctl

clean:
	$(SWIFT) package clean
	rm -rf .build $(RUN_DIR)
