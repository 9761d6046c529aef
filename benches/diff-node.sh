#!/usr/bin/env bash
# `mesh-host diff FILE --local` beside the no-op `apply FILE --local` it
# previews and `docker ps -a`, over N busybox services, rounds alternating
# (docs/benchmarks.md "diff beside the no-op apply"). Prints one line per
# round and the medians. Nothing is asserted on a time.
#
# Usage: benches/diff-node.sh        (a node must be up: tests/node/node up)
# Environment:
#   MESH_HOST_BIN   the binary to measure (default: cargo build --release)
#   BENCH_SERVICES  N (default 1000)
#   BENCH_RUNS      rounds (default 7)
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
bin=$("$node" install-bin "$MESH_HOST_BIN")
dir=$state/bench/diff-$$
mkdir -p "$dir"
trap 'rm -rf "$dir"' EXIT
python3 - "$n" "$img" "$dir/decl.json" <<'PY'
import json, sys
n, img, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
res = [{"id": f"s{i}", "type": "container", "name": f"dbench-{i}", "image": img,
        "network": "host", "command": ["sleep", "1d"]} for i in range(n)]
json.dump({"declaration": 1, "resources": res}, open(out, "w"))
PY
cat >"$dir/inside.sh" <<INSIDE
set -e
m() { $bin --state-dir $dir/state --declaration $dir/installed.json "\$@"; }
ms() { local s=\$(date +%s%N); "\$@" >/dev/null 2>&1 || true; echo \$(( (\$(date +%s%N) - s) / 1000000 )); }
cleanup() { ids=\$(docker ps -aq --filter name=^/dbench-); [ -z "\$ids" ] || docker rm -f \$ids >/dev/null; }
trap cleanup EXIT
m apply $dir/decl.json --local | tail -1
for r in \$(seq $runs); do
	echo "noop-apply \$(ms m apply $dir/decl.json --local) diff \$(ms m diff $dir/decl.json --local) docker-ps-a \$(ms docker ps -a)"
done
m diff $dir/decl.json --local | tail -1
INSIDE
"$node" exec bash "$dir/inside.sh" | tee "$dir/out"
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for col in 2 4 6; do
	printf '%s median %s ms\n' "$(awk -v c=$((col - 1)) 'NR==2 {print $c}' "$dir/out")" \
		"$(awk -v c=$col '/^noop-apply/ {print $c}' "$dir/out" | median)"
done
