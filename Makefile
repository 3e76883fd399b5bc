# The two commands of the README.
.PHONY: demo test bench fuzz lab ofbench

demo:
	scripts/demo.sh

test:
	scripts/test.sh

# Not part of `make test`: figures for docs/PERFORMANCE.md, fuzzing for docs/FUZZING.md.
lab:
	scripts/lab.sh

# OpenFlow: 1M flow adds (and Open vSwitch, as root), PACKET_IN/OUT round trips.
ofbench:
	scripts/ofbench.sh

bench:
	cargo bench -p ofp --bench codec && cargo bench -p pipeline --bench pipeline

fuzz:
	scripts/fuzz.sh --seconds 600
