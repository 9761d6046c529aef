#!/usr/bin/env bash
# How long a service is down when its image changes, on the sandbox node
# (tests/README.md), printed as a Markdown table (docs/benchmarks.md,
# "Updates: a recreate gated on health beside a plain one"):
#
#   gated   a service with a health check (every second, `true`): the old
#           container is set aside, the new one made and started, judged
#           healthy, and only then the old one removed (docs/updates.md);
#   plain   the same service with `"health": "none"`: replaced as before,
#           the old one removed once the new one is made.
#
# Each round applies the other of two images (busybox and busybox-alt, both
# pulled first) with `mesh-host apply FILE --local`, rounds alternating
# gated and plain. The service is down from the old container's `kill`
# event to the new container's `start` event (Docker's event times); the
# whole apply is timed too (the gated one waits for the first probe).
#
# Usage: benches/rollout-node.sh   (a node must be up: tests/node/node up)
# Environment:
#   MESH_HOST_BIN        the binary to measure (default: cargo build --release)
#   BENCH_ROLLOUT_RUNS   rounds of each (default 5)
#
# It never boots or powers off the node, works under its own state
# directory and container name prefix, and removes what it made.
set -euo pipefail

die() {
	printf 'rollout-node.sh: %s\n' "$*" >&2
	exit 1
}

SERVICE_CMD='trap "exit 0" TERM; while :; do sleep 3600 & wait $!; done'

# ---------------------------------------------------------------- inside
inside() {
	local dir=$1 bin=$2 img_a=$3 img_b=$4 prefix=$5 runs=$6
	run_prefix=$prefix
	trap 'docker rm -f "$run_prefix-gated" "$run_prefix-plain" >/dev/null 2>&1 || true' EXIT
	docker pull -q "$img_a" >/dev/null
	docker pull -q "$img_b" >/dev/null
	echo "| recreate | service down (old kill → new start) | whole apply | rounds |"
	echo "|---|---|---|---|"
	local g_down=() g_all=() p_down=() p_all=() r img
	for mode in gated plain; do
		write "$dir/$mode.json" "$prefix-$mode" "$img_a" "$mode"
		"$bin" apply "$dir/$mode.json" --local --state-dir "$dir/state-$mode" >/dev/null 2>&1 ||
			die "the first apply of $mode failed"
	done
	for ((r = 0; r < runs; r++)); do
		img=$img_b
		((r % 2 == 0)) || img=$img_a
		for mode in gated plain; do
			write "$dir/$mode.json" "$prefix-$mode" "$img" "$mode"
			local t0=$EPOCHREALTIME
			"$bin" apply "$dir/$mode.json" --local --state-dir "$dir/state-$mode" >"$dir/out" 2>&1 ||
				die "apply of $mode failed: $(cat "$dir/out")"
			local all_us
			all_us=$(elapsed_us "$t0")
			read_down "$t0" "$prefix-$mode"
			if [[ $mode == gated ]]; then
				g_down+=("$down_us")
				g_all+=("$all_us")
			else
				p_down+=("$down_us")
				p_all+=("$all_us")
			fi
		done
	done
	echo "| gated on health | $(stats_ms "${g_down[@]}") | $(stats_ms "${g_all[@]}") | $runs |"
	echo "| plain (\`\"health\": \"none\"\`) | $(stats_ms "${p_down[@]}") | $(stats_ms "${p_all[@]}") | $runs |"
}

# A declaration of one service $2 of image $3, gated on health or not ($4).
write() {
	local health='"none"'
	[[ $4 == plain ]] || health='{"command": ["true"], "interval": 1, "timeout": 1, "retries": 1}'
	cat >"$1" <<EOF
{"declaration": 1, "resources": [
  {"type": "container", "id": "web", "name": "$2", "image": "$3",
   "command": ["sh", "-c", $(printf '%s' "$SERVICE_CMD" | python3 -c 'import json,sys; print(json.dumps(sys.stdin.read()))')],
   "network": "none", "health": $health}
]}
EOF
}

# down_us: from the first kill of a container named $2 (or $2 set aside)
# since $1 to the last start of one.
read_down() {
	local events kill start
	events=$(docker events --since "$1" --until "$EPOCHREALTIME" --filter type=container \
		--format '{{.TimeNano}} {{.Actor.Attributes.name}} {{.Action}}')
	kill=$(awk -v n="$2" 'index($2, n) == 1 && $3 == "kill" { print $1; exit }' <<<"$events")
	start=$(awk -v n="$2" 'index($2, n) == 1 && $3 == "start" { t = $1 } END { print t }' <<<"$events")
	[[ -n $kill && -n $start ]] || die "incomplete events for $2:
$events"
	down_us=$(((start - kill) / 1000))
}

# Microseconds since $1 (an $EPOCHREALTIME value).
elapsed_us() {
	local now=$EPOCHREALTIME
	echo $((${now/./} - ${1/./}))
}

# "median (min–max)" in ms of microsecond values.
stats_ms() {
	printf '%s\n' "$@" | sort -n | awk '
		{ v[NR] = $1 }
		END {
			m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			printf "%.0f (%.0f–%.0f)", m / 1000, v[1] / 1000, v[NR] / 1000
		}'
}

if [[ ${1:-} == --inside ]]; then
	shift
	inside "$@"
	exit
fi

# ---------------------------------------------------------------- outside
# shellcheck source=benches/node-env.sh
source "$(dirname "${BASH_SOURCE[0]}")/node-env.sh"
img_alt=$(env_value MESH_NODE_IMAGE_BUSYBOX_ALT)
[[ -n $img_alt ]] || die "the node env file lacks MESH_NODE_IMAGE_BUSYBOX_ALT"

bin=${MESH_HOST_BIN:-}
if [[ -z $bin ]]; then
	(cd "$repo" && cargo build --release --bin mesh-host >&2)
	bin=${CARGO_TARGET_DIR:-$repo/target}/release/mesh-host
fi
[[ -x $bin ]] || die "no executable at $bin"

prefix=mhroll-$$
dir=$state/bench/$prefix
mkdir -p "$dir"
trap 'rm -rf "$dir"; rmdir "$state/bench" 2>/dev/null || true' EXIT
cp "$bin" "$dir/mesh-host"
cp "${BASH_SOURCE[0]}" "$dir/rollout-node.sh"

echo "## A recreate gated on health beside a plain one ($(date -u +%Y-%m-%dT%H:%MZ))"
echo
echo "Binary: $bin; Docker $("$node" exec docker version --format '{{.Server.Version}} (API {{.Server.APIVersion}})' 2>/dev/null || echo unknown); load average at start: $(cut -d' ' -f1-3 /proc/loadavg). Times in ms: median (fastest–slowest run)."
echo
"$node" exec bash "$dir/rollout-node.sh" --inside "$dir" "$dir/mesh-host" "$img" "$img_alt" "$prefix" "${BENCH_ROLLOUT_RUNS:-5}"
echo
echo "Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
