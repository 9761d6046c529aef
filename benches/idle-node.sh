#!/usr/bin/env bash
# How often the idle daemon wakes, on the sandbox node (tests/README.md),
# printed as a Markdown table (docs/benchmarks.md, "The idle daemon").
#
# `mesh-host daemon` runs as a transient Type=notify service with
# WatchdogSec=30 and an empty declaration; once it is ready and has settled,
# the voluntary context switches of all its threads are summed from
# /proc/PID/task/*/status at the start and the end of a 30 s window (a
# voluntary switch is a thread going to sleep after it woke: one per wake).
# Peers, read over the very same windows: Docker's own daemons on the node
# (dockerd, containerd), idle too. With MESH_HOST_PEER_BIN, a second
# mesh-host binary (e.g. an earlier build) runs as a second service at the
# same time and is read the same way.
#
# Usage: benches/idle-node.sh          (a node must be up: tests/node/node up)
# Environment:
#   MESH_HOST_BIN       the binary to measure (default: cargo build --release)
#   MESH_HOST_PEER_BIN  another mesh-host binary measured beside it (optional)
#   BENCH_IDLE_RUNS     30 s windows (default 5)
#   BENCH_IDLE_SECONDS  length of a window (default 30)
#   BENCH_IDLE_STRACE   1: also trace each daemon's wake-up syscalls over one
#                       window (strace -f -e trace=futex,epoll_wait,...)
set -euo pipefail

die() {
	echo "idle-node.sh: $*" >&2
	exit 1
}

# Sum of voluntary_ctxt_switches over all threads of $1.
switches() {
	local sum=0 n f
	for f in /proc/"$1"/task/*/status; do
		n=$(awk '/^voluntary_ctxt_switches:/ { print $2 }' "$f" 2>/dev/null || echo 0)
		sum=$((sum + ${n:-0}))
	done
	echo "$sum"
}

threads() {
	ls /proc/"$1"/task | wc -l
}

# ---------------------------------------------------------------- inside
inside() {
	local dir=$1 prefix=$2
	shift 2
	local bins=("$@")
	local runs=${BENCH_IDLE_RUNS:-5} secs=${BENCH_IDLE_SECONDS:-30}
	units=()
	trap inside_cleanup EXIT
	printf '{"declaration": 1, "resources": []}\n' >"$dir/declaration.json"
	local i pids=() labels=()
	for i in "${!bins[@]}"; do
		local unit=$prefix-$i
		mkdir -p "$dir/state-$i" "$dir/units-$i"
		systemd-run --quiet --unit="$unit" -p Type=notify -p NotifyAccess=main \
			-p WatchdogSec=30 -p TimeoutStartSec=120 \
			"${bins[i]}" daemon --state-dir "$dir/state-$i" \
			--declaration "$dir/declaration.json" \
			--control-socket "$dir/control-$i.sock" --unit-dir "$dir/units-$i" ||
			die "cannot start ${bins[i]} as $unit"
		units+=("$unit")
		pids+=("$(systemctl show -P MainPID "$unit")")
		labels+=("${bins[i]##*/}")
	done
	local docker_pid containerd_pid
	docker_pid=$(systemctl show -P MainPID docker.service)
	containerd_pid=$(pgrep -x containerd | head -1 || true)
	# Settle: start-up work (the first apply, the bus) is not idling.
	sleep 5
	local -A sums=()
	local r p t0 name
	for ((r = 0; r < runs; r++)); do
		local -A before=()
		for i in "${!pids[@]}"; do before[m$i]=$(switches "${pids[i]}"); done
		before[docker]=$(switches "$docker_pid")
		[[ -z $containerd_pid ]] || before[containerd]=$(switches "$containerd_pid")
		sleep "$secs"
		for i in "${!pids[@]}"; do
			systemctl is-active --quiet "${units[i]}" || die "${units[i]} stopped: $(journalctl -u "${units[i]}" -n 20 -o cat)"
			sums[m$i]+="$(($(switches "${pids[i]}") - before[m$i])) "
		done
		sums[docker]+="$(($(switches "$docker_pid") - before[docker])) "
		[[ -z $containerd_pid ]] || sums[containerd]+="$(($(switches "$containerd_pid") - before[containerd])) "
	done
	echo "| process | threads | voluntary switches per ${secs} s: median (min–max) | per run |"
	echo "|---|---|---|---|"
	for i in "${!pids[@]}"; do
		name="mesh-host daemon (${labels[i]})"
		echo "| $name | $(threads "${pids[i]}") | $(median ${sums[m$i]}) | ${sums[m$i]}|"
	done
	echo "| dockerd | $(threads "$docker_pid") | $(median ${sums[docker]}) | ${sums[docker]}|"
	[[ -z $containerd_pid ]] ||
		echo "| containerd | $(threads "$containerd_pid") | $(median ${sums[containerd]}) | ${sums[containerd]}|"
	if [[ ${BENCH_IDLE_STRACE:-} == 1 ]] && command -v strace >/dev/null; then
		echo
		for i in "${!pids[@]}"; do
			echo "Wake-up syscalls of ${labels[i]} over ${secs} s (strace -f -c):"
			echo
			echo '```'
			timeout -s INT "$secs" strace -f -c -e trace=futex,epoll_wait,epoll_pwait,clock_nanosleep,nanosleep,poll,ppoll,read -p "${pids[i]}" 2>&1 | sed -n '/calls/,$p' || true
			echo '```'
			echo
		done
	fi
}

inside_cleanup() {
	local u
	for u in "${units[@]}"; do systemctl stop "$u" >/dev/null 2>&1 || true; done
}

median() {
	printf '%s\n' "$@" | sort -n | awk '
		{ v[NR] = $1 }
		END {
			m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			printf "%g (%g–%g)", m, v[1], v[NR]
		}'
}

if [[ ${1:-} == --inside ]]; then
	shift
	inside "$@"
	exit 0
fi

# ---------------------------------------------------------------- outside
# shellcheck source=benches/node-env.sh
source "$(dirname "${BASH_SOURCE[0]}")/node-env.sh"
bin=${MESH_HOST_BIN:-}
if [[ -z $bin ]]; then
	(cd "$repo" && cargo build --release --bin mesh-host >&2)
	bin=${CARGO_TARGET_DIR:-$repo/target}/release/mesh-host
fi
[[ -x $bin ]] || die "no executable at $bin"
prefix=mhidle-$$
dir=$state/bench/$prefix
mkdir -p "$dir"
cleanup() {
	rm -rf "$dir"
	rmdir "$state/bench" 2>/dev/null || true
}
trap cleanup EXIT
cp "$bin" "$dir/mesh-host"
bins=("$dir/mesh-host")
if [[ -n ${MESH_HOST_PEER_BIN:-} ]]; then
	[[ -x $MESH_HOST_PEER_BIN ]] || die "no executable at $MESH_HOST_PEER_BIN"
	cp "$MESH_HOST_PEER_BIN" "$dir/mesh-host-peer"
	bins+=("$dir/mesh-host-peer")
fi
cp "${BASH_SOURCE[0]}" "$dir/idle-node.sh"
echo "## The idle daemon on the sandbox node ($(date -u +%Y-%m-%dT%H:%MZ))"
echo
echo "WatchdogSec=30, an empty declaration; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)."
echo
"$node" exec env BENCH_IDLE_RUNS="${BENCH_IDLE_RUNS:-5}" BENCH_IDLE_SECONDS="${BENCH_IDLE_SECONDS:-30}" \
	BENCH_IDLE_STRACE="${BENCH_IDLE_STRACE:-}" \
	bash "$dir/idle-node.sh" --inside "$dir" "$prefix" "${bins[@]}"
echo
echo "Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
