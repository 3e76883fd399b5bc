# The two commands of the README.
.PHONY: demo test bench fuzz lab lab-json bench-report ofbench tunnelbench conformance install uninstall

demo:
	scripts/demo.sh

test:
	scripts/test.sh

# Not part of `make test`: figures for docs/PERFORMANCE.md, fuzzing for docs/FUZZING.md.

# Every performance scenario, 3 interleaved rounds, side by side with the
# peers: docs/bench/REPORT-<date>.md with plots (root; about 20 minutes;
# QUICK=1: under 3 minutes; SCENARIOS="forwarding control" for some).
bench-report:
	scripts/bench-report.sh $(if $(filter-out 0,$(QUICK)),--quick) $(SCENARIOS)

# One round of the lab (forwarding, then active flows), one JSON object per
# switch and scenario per line on stdout, to track figures over time (root).
lab-json:
	@scripts/lab.sh --json forwarding && scripts/lab.sh --json flows

# The forwarding lab, one round, as a Markdown table (root).
lab:
	scripts/lab.sh

# The os-ken OpenFlow 1.3 switch test tool, all 991 cases (root; about
# 30 minutes): a table per category into docs/CONFORMANCE.md.
conformance:
	scripts/conformance.sh --record

# OpenFlow: 1M flow adds (and Open vSwitch, as root), PACKET_IN/OUT round trips.
ofbench:
	scripts/ofbench.sh

# Overlays (root): 1M flows of the cloud agent's form into sluice and Open
# vSwitch, and VM-to-VM forwarding through VXLAN (sluice, the kernel, OVS).
tunnelbench:
	scripts/tunnelbench.sh

bench:
	cargo bench -p ofp --bench codec && cargo bench -p pipeline --bench pipeline

fuzz:
	scripts/fuzz.sh --seconds 600

# Installs the binaries, man pages, shell completions, the systemd unit and
# an example configuration (never over an existing one). DESTDIR for
# packaging; PREFIX=/usr/local by default.
PREFIX ?= /usr/local
BINDIR = $(PREFIX)/bin
MANDIR = $(PREFIX)/share/man/man1
RELEASE = $(or $(CARGO_TARGET_DIR),target)/release
install:
	cargo build --release --locked -p sluice -p ctl
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR) $(DESTDIR)/etc/sluice $(DESTDIR)/etc/systemd/system \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions $(DESTDIR)$(PREFIX)/share/zsh/site-functions \
		$(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d
	install -m 0755 $(RELEASE)/sluice $(RELEASE)/sluice-ctl $(DESTDIR)$(BINDIR)/
	for b in sluice sluice-ctl; do \
		$(RELEASE)/$$b --generate-man >$(DESTDIR)$(MANDIR)/$$b.1 && \
		$(RELEASE)/$$b --generate-completions bash >$(DESTDIR)$(PREFIX)/share/bash-completion/completions/$$b && \
		$(RELEASE)/$$b --generate-completions zsh >$(DESTDIR)$(PREFIX)/share/zsh/site-functions/_$$b && \
		$(RELEASE)/$$b --generate-completions fish >$(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/$$b.fish || exit 1; \
	done
	sed 's|@BINDIR@|$(BINDIR)|g' dist/sluice.service >$(DESTDIR)/etc/systemd/system/sluice.service
	[ -e $(DESTDIR)/etc/sluice/sluice.toml ] || install -m 0644 dist/sluice.toml $(DESTDIR)/etc/sluice/sluice.toml
	install -m 0644 dist/sluice.toml $(DESTDIR)/etc/sluice/sluice.toml.example

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/sluice $(DESTDIR)$(BINDIR)/sluice-ctl \
		$(DESTDIR)$(MANDIR)/sluice.1 $(DESTDIR)$(MANDIR)/sluice-ctl.1 \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions/sluice $(DESTDIR)$(PREFIX)/share/bash-completion/completions/sluice-ctl \
		$(DESTDIR)$(PREFIX)/share/zsh/site-functions/_sluice $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_sluice-ctl \
		$(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/sluice.fish $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/sluice-ctl.fish \
		$(DESTDIR)/etc/systemd/system/sluice.service $(DESTDIR)/etc/sluice/sluice.toml.example
