#!/usr/bin/env bash
# `mesh-host diff FILE --local` beside the no-op `apply FILE --local` it
# previews and `docker ps -a`, over N busybox services, rounds alternating
# (docs/benchmarks.md "diff beside the no-op apply"). With
# MESH_HOST_BIN_BEFORE, another build's no-op apply and diff are measured
# in the same rounds, the two builds taking turns going first, over the
# same containers and state directory: a before/after side by side. Prints one
# line per round and the medians. Nothing is asserted on a time.
#
# Usage: benches/diff-node.sh        (a node must be up: tests/node/node up)
# Environment:
#   MESH_HOST_BIN         the binary to measure (default: cargo build --release)
#   MESH_HOST_BIN_BEFORE  another build to measure beside it (optional)
#   BENCH_SERVICES        N (default 1000)
#   BENCH_RUNS            rounds (default 7)
set -euo pipefail
die() {
	echo "diff-node.sh: $*" >&2
	exit 1
}
# shellcheck source=node-env.sh
source "$(dirname "${BASH_SOURCE[0]}")/node-env.sh"
n=${BENCH_SERVICES:-1000}
runs=${BENCH_RUNS:-7}
if [[ -z ${MESH_HOST_BIN:-} ]]; then
	(cd "$repo" && cargo build --release --quiet)
	MESH_HOST_BIN=$repo/target/release/mesh-host
fi
# The binaries are copied into this run's directory, visible at the same
# path inside the node (install-bin would replace the mesh-host that tests
# running alongside have installed).
dir=$state/bench/diff-$$
mkdir -p "$dir"
trap 'rm -rf "$dir"' EXIT
cp "$MESH_HOST_BIN" "$dir/mesh-host"
before=""
if [[ -n ${MESH_HOST_BIN_BEFORE:-} ]]; then
	[[ -x $MESH_HOST_BIN_BEFORE ]] || die "no executable at $MESH_HOST_BIN_BEFORE"
	cp "$MESH_HOST_BIN_BEFORE" "$dir/mesh-host-before"
	before=$dir/mesh-host-before
fi
python3 - "$n" "$img" "$dir/decl.json" <<'PY'
import json, sys
n, img, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
res = [{"id": f"s{i}", "type": "container", "name": f"dbench-{i}", "image": img,
        "network": "host", "command": ["sleep", "1d"]} for i in range(n)]
json.dump({"declaration": 1, "resources": res}, open(out, "w"))
PY
cat >"$dir/inside.sh" <<INSIDE
set -e
m() { local bin=\$1; shift; \$bin --state-dir $dir/state --declaration $dir/installed.json "\$@"; }
# ms EXPECTED CMD...: CMD's time in ms; its exit status must be EXPECTED
# (0 for a no-op apply and for a diff that finds nothing to do).
ms() {
	local want=\$1; shift
	local s=\$(date +%s%N) rc=0
	"\$@" >/dev/null 2>&1 || rc=\$?
	local took=\$(( (\$(date +%s%N) - s) / 1000000 ))
	[ \$rc = \$want ] || { echo "\$* exited \$rc" >&2; exit 1; }
	echo \$took
}
cleanup() { ids=\$(docker ps -aq --filter name=^/dbench-); [ -z "\$ids" ] || docker rm -f \$ids >/dev/null; }
trap cleanup EXIT
m $dir/mesh-host apply $dir/decl.json --local | tail -1
# With another build, the two take turns going first, round by round.
for r in \$(seq $runs); do
	if [ -n "$before" ] && [ \$((r % 2)) = 0 ]; then
		b_apply=\$(ms 0 m $before apply $dir/decl.json --local)
		apply=\$(ms 0 m $dir/mesh-host apply $dir/decl.json --local)
		b_diff=\$(ms 0 m $before diff $dir/decl.json --local)
		diff=\$(ms 0 m $dir/mesh-host diff $dir/decl.json --local)
	else
		apply=\$(ms 0 m $dir/mesh-host apply $dir/decl.json --local)
		[ -z "$before" ] || b_apply=\$(ms 0 m $before apply $dir/decl.json --local)
		diff=\$(ms 0 m $dir/mesh-host diff $dir/decl.json --local)
		[ -z "$before" ] || b_diff=\$(ms 0 m $before diff $dir/decl.json --local)
	fi
	line="noop-apply \$apply"
	[ -z "$before" ] || line="\$line noop-apply-before \$b_apply"
	line="\$line diff \$diff"
	[ -z "$before" ] || line="\$line diff-before \$b_diff"
	echo "\$line docker-ps-a \$(ms 0 docker ps -a)"
done
m $dir/mesh-host diff $dir/decl.json --local | tail -1
INSIDE
"$node" exec bash "$dir/inside.sh" | tee "$dir/out"
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
range() { sort -n | awk 'NR==1 {lo=$1} {hi=$1} END {print lo "–" hi}'; }
# Each measurement's median and range over the rounds, by its name.
awk '/^noop-apply/ {for (i = 1; i < NF; i += 2) print $i}' "$dir/out" | head -n 20 | awk '!seen[$0]++' |
	while read -r name; do
		values=$(awk -v k="$name" '/^noop-apply/ {for (i = 1; i < NF; i += 2) if ($i == k) print $(i + 1)}' "$dir/out")
		printf '%s median %s ms (%s)\n' "$name" "$(median <<<"$values")" "$(range <<<"$values")"
	done
