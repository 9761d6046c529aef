#!/usr/bin/env bash
# Node-level measurements of mesh-host on the sandbox node (tests/README.md),
# printed as Markdown tables (docs/benchmarks.md):
#
#  1. `mesh-host apply FILE --local` for N busybox service containers:
#     the first apply (creates and starts N) and a no-op second apply, with
#     their peers in the same run, rounds alternating: `docker-compose up -d`
#     of the same N services (Debian's docker-compose 1.29, which creates in
#     parallel; tests/node/prereqs.sh installs it) and `docker run -d` N
#     times by hand (up to 100 services; a thousand `docker run` in a row
#     take minutes); one `docker ps -a` for the no-op. Above 100 services,
#     one first-apply round of mesh-host alone (the peers take many minutes
#     on a small node; the no-op is what such a size measures). With
#     MESH_HOST_BIN_BEFORE, a second build is measured in the same rounds,
#     right after the first (first apply and no-op), for a before/after
#     side by side; and
#     the Docker API requests of one no-op apply, read by a logging proxy in
#     front of Docker's socket, with `docker events` showing no mutating
#     event (the contract: a no-op apply costs one container listing and
#     the file reads).
#  2. The window overhead of `mesh-host run STEP --local` holding K
#     containers: from the command's start to the step container's start
#     event, and from the step's die event to the last held container's
#     start event (Docker's event times). Peer in the same run: the same
#     sequence by hand, `docker stop h1..hK; docker run STEP; docker start
#     hK..h1`, timed the same way. Rounds alternate mesh-host and peer.
#     Also how long the first held container is down beyond the step's own
#     run: from its kill to the step's start, plus from the step's die to
#     its start again.
#
# Usage: benches/apply-node.sh          (a node must be up: tests/node/node up)
# Environment:
#   MESH_HOST_BIN      the binary to measure (default: cargo build --release)
#   MESH_HOST_BIN_BEFORE  another build to measure beside it (optional)
#   BENCH_SIZES        service counts for apply (default "1 10 30 100 1000";
#                      about 20 minutes on a 2-core node, most of it the
#                      first apply and removal of 1,000 containers; set
#                      and empty: no apply, only the window)
#   BENCH_HOLDS        held-container counts for the window (default "1 5")
#   BENCH_CREATE_RUNS  first applies per size (default 5)
#   BENCH_COMPOSE_PARALLEL  creates and starts docker-compose has in flight
#                      (its COMPOSE_PARALLEL_LIMIT; default: compose's own, 64,
#                      which this node's Docker 20.10 has hung on at 100
#                      services; 16 is mesh-host's width)
#   BENCH_NOOP_RUNS    no-op applies per size (default 10)
#   BENCH_WINDOW_RUNS  rounds per hold count, each of mesh-host and peer (default 5)
#
# It never boots or powers off the node, works under its own state
# directory and container name prefix, and removes every container it made,
# whatever happens.
set -euo pipefail

# A busybox service whose PID 1 ends at once on SIGTERM (`wait` returns
# when a trapped signal arrives; a bare `sleep` would delay the trap). It
# wakes hourly: a thousand services waking every second kept a 2-core node
# at a load average above 100 and measured that, not the apply.
SERVICE_CMD='trap "exit 0" TERM; while :; do sleep 3600 & wait $!; done'

# ---------------------------------------------------------------- inside
# Everything below `inside` runs in the node (nsenter), where Docker's
# socket, systemd and the journal are.
inside() {
	local dir=$1 bin=$2 img=$3 prefix=$4 before=${5:-}
	local sizes=${BENCH_SIZES-1 10 30 100 1000} holds=${BENCH_HOLDS:-1 5}
	local create_runs=${BENCH_CREATE_RUNS:-5} noop_runs=${BENCH_NOOP_RUNS:-10}
	local window_runs=${BENCH_WINDOW_RUNS:-5}
	proxy_pid=""
	run_prefix=$prefix
	mesh_log=$dir/mesh-host.log
	trap inside_cleanup EXIT
	# Pulled once, so a first apply measures create and start, not a pull.
	docker pull -q "$img" >/dev/null

	[[ -z ${sizes// /} ]] || apply_sections "$dir" "$img" "$prefix" "$sizes" "$create_runs" "$noop_runs"
	window_section "$dir" "$img" "$prefix" "$holds" "$window_runs"
}

# The apply tables: first and no-op applies of each size, and the Docker
# API requests of one no-op apply.
apply_sections() {
	local dir=$1 img=$2 prefix=$3 sizes=$4 create_runs=$5 noop_runs=$6
	echo "### apply --local: first apply (creates) against docker-compose and the docker CLI; no-op apply"
	echo
	if [[ -n $before ]]; then
		echo "| services | first apply | before | \`docker-compose up -d\` | mesh-host / compose | before / compose | \`docker run -d\` × N | runs | no-op apply | before | \`docker ps -a\` | runs |"
		echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
	else
		echo "| services | first apply | \`docker-compose up -d\` | mesh-host / compose | \`docker run -d\` × N | runs | no-op apply | \`docker ps -a\` | runs |"
		echo "|---|---|---|---|---|---|---|---|---|"
	fi
	local n i r out
	for n in $sizes; do
		local decl=$dir/apply-$n.json state=$dir/state-apply-$n base=$prefix-a$n
		local compose=$dir/compose-$n.yml project=${prefix//-/}a$n
		write_services "$decl" "$base" "$n" "$img"
		write_compose "$compose" "$base" "$n" "$img"
		local creates=() compose_creates=() peer_creates=() ratios=() noops=() peer_noops=()
		local b_creates=() b_ratios=() b_noops=() compose_ok=1 compose_hung=0
		# Hundreds of containers: one round of mesh-host alone (the peers
		# take many minutes on a small node); the no-op applies are what
		# such a size is measured for.
		local rounds=$create_runs peers=1 cli=1
		((n <= 100)) || rounds=1 peers=0
		((n <= 100)) || cli=0
		for ((r = 0; r < rounds; r++)); do
			local t0
			if ((peers)); then
				# The peers: the same containers made by docker-compose (which
				# creates in parallel), then by hand one after another.
				remove_prefix "$base-"
				t0=$EPOCHREALTIME
				# Bounded: at 100 services compose 1.29 has been seen to stop
				# for good, its threads all waiting on locks while Docker
				# answered other requests. Such a round is counted as hung,
				# and has no ratio.
				compose_ok=1
				timeout $((60 + 2 * n)) env ${BENCH_COMPOSE_PARALLEL:+COMPOSE_PARALLEL_LIMIT=$BENCH_COMPOSE_PARALLEL} \
					docker-compose -p "$project" -f "$compose" up -d >/dev/null 2>"$dir/compose.log" ||
					compose_ok=0
				if ((compose_ok)); then
					compose_creates+=("$(elapsed_us "$t0")")
					expect_running "$base-" "$n"
				else
					compose_hung=$((compose_hung + 1))
					echo "apply-node.sh: docker-compose up of $n hung or failed: $(tail -n 2 "$dir/compose.log")" >&2
				fi
				if ((cli)); then
					remove_prefix "$base-"
					t0=$EPOCHREALTIME
					for ((i = 1; i <= n; i++)); do
						docker run -d --name "$base-$i" --network none --restart unless-stopped \
							"$img" sh -c "$SERVICE_CMD" >/dev/null
					done
					peer_creates+=("$(elapsed_us "$t0")")
				fi
			fi
			if [[ -n $before ]] && ((peers)); then
				remove_prefix "$base-"
				rm -rf "$state"
				t0=$EPOCHREALTIME
				out=$(bin=$before mesh apply "$decl" --local --state-dir "$state" --declaration "$state.declaration.json")
				b_creates+=("$(elapsed_us "$t0")")
				expect_count "$out" created "$n"
				expect_running "$base-" "$n"
				((!compose_ok)) || b_ratios+=("$((b_creates[-1] * 1000 / compose_creates[-1]))")
			fi
			remove_prefix "$base-"
			rm -rf "$state"
			t0=$EPOCHREALTIME
			out=$(mesh apply "$decl" --local --state-dir "$state" --declaration "$state.declaration.json")
			creates+=("$(elapsed_us "$t0")")
			expect_count "$out" created "$n"
			expect_running "$base-" "$n"
			((!peers || !compose_ok)) || ratios+=("$((creates[-1] * 1000 / compose_creates[-1]))")
			create_since=$t0 create_until=$EPOCHREALTIME
		done
		# No-op applies, each followed by the other build's and the peer:
		# one listing by the CLI.
		for ((i = 0; i < noop_runs; i++)); do
			t0=$EPOCHREALTIME
			out=$(mesh apply "$decl" --local --state-dir "$state" --declaration "$state.declaration.json")
			noops+=("$(elapsed_us "$t0")")
			expect_count "$out" unchanged "$n"
			if [[ -n $before ]]; then
				t0=$EPOCHREALTIME
				out=$(bin=$before mesh apply "$decl" --local --state-dir "$state" --declaration "$state.declaration.json")
				b_noops+=("$(elapsed_us "$t0")")
				expect_count "$out" unchanged "$n"
			fi
			t0=$EPOCHREALTIME
			docker ps -a --filter "name=^/$base-" >/dev/null
			peer_noops+=("$(elapsed_us "$t0")")
		done
		local cli_cell="—" compose_cell="—" ratio_cell="—"
		((${#peer_creates[@]} == 0)) || cli_cell=$(stats_ms "${peer_creates[@]}")
		if ((${#compose_creates[@]})); then
			compose_cell=$(stats_ms "${compose_creates[@]}") ratio_cell=$(ratio_of "${ratios[@]}")
		fi
		((compose_hung == 0)) || compose_cell+=", hung in $compose_hung of ${#creates[@]} rounds"
		if [[ -n $before ]]; then
			local b_create="—" b_ratio="—"
			if ((peers)); then
				b_create=$(stats_ms "${b_creates[@]}")
				((${#b_ratios[@]} == 0)) || b_ratio=$(ratio_of "${b_ratios[@]}")
			fi
			if ((peers)); then
				echo "| $n | $(stats_ms "${creates[@]}") | $b_create | $compose_cell | $ratio_cell | $b_ratio | $cli_cell | ${#creates[@]} | $(stats_ms "${noops[@]}") | $(stats_ms "${b_noops[@]}") | $(stats_ms "${peer_noops[@]}") | ${#noops[@]} |"
			else
				echo "| $n | $(stats_ms "${creates[@]}") | — | — | — | — | — | ${#creates[@]} | $(stats_ms "${noops[@]}") | $(stats_ms "${b_noops[@]}") | $(stats_ms "${peer_noops[@]}") | ${#noops[@]} |"
			fi
		elif ((peers)); then
			echo "| $n | $(stats_ms "${creates[@]}") | $compose_cell | $ratio_cell | $cli_cell | ${#creates[@]} | $(stats_ms "${noops[@]}") | $(stats_ms "${peer_noops[@]}") | ${#noops[@]} |"
		else
			echo "| $n | $(stats_ms "${creates[@]}") | — | — | — | ${#creates[@]} | $(stats_ms "${noops[@]}") | $(stats_ms "${peer_noops[@]}") | ${#noops[@]} |"
		fi
	done

	echo
	echo "### Docker API requests of one no-op apply"
	echo
	local n_last
	for n in $sizes; do n_last=$n; done
	local decl=$dir/apply-$n_last.json state=$dir/state-apply-$n_last
	local sock=$dir/docker-proxy.sock log=$dir/docker-proxy.log
	python3 "$dir/proxy.py" "$sock" /run/docker.sock "$log" &
	proxy_pid=$!
	for ((i = 0; i < 50; i++)); do
		[[ -S $sock ]] && break
		sleep 0.1
	done
	[[ -S $sock ]] || die "the logging proxy did not start"
	local since=$EPOCHREALTIME
	out=$(mesh apply "$decl" --local --state-dir "$state" --declaration "$state.declaration.json" --docker-host "unix://$sock")
	expect_count "$out" unchanged "$n_last"
	local until=$EPOCHREALTIME
	kill "$proxy_pid"
	wait "$proxy_pid" 2>/dev/null || true
	proxy_pid=""
	local ours created_events
	ours=$(events_of "$prefix-" "$since" "$until")
	created_events=$(events_of "$prefix-" "$create_since" "$create_until")
	echo "With $n_last declared services, unchanged; requests in order, as the proxy read them:"
	echo
	echo '```'
	sed -E 's/(filters=)[^ ]*/\1.../' "$log"
	echo '```'
	echo
	echo "Requests: $(wc -l <"$log"). Docker events on the declared containers during that apply: $ours (during the last first apply of the same declaration, counted the same way: $created_events)."
	echo

}

# The window table: mesh-host run --local holding K containers against the
# same by hand with the docker CLI.
window_section() {
	local dir=$1 img=$2 prefix=$3 holds=$4 window_runs=$5
	echo "### Window overhead: mesh-host run --local against the docker CLI by hand"
	echo
	echo "| held | method | start → step start | step die → last held start | first held down beyond the step | whole command | rounds |"
	echo "|---|---|---|---|---|---|---|"
	local k
	for k in $holds; do
		local names=() held_ids=()
		for ((i = 1; i <= k; i++)); do
			names+=("$prefix-w$k-h$i")
			held_ids+=("\"h$i\"")
		done
		local step=$prefix-w$k-step wdecl=$dir/window-$k.json wstate=$dir/state-window-$k
		write_window "$wdecl" "$img" "$step" "$(
			IFS=,
			echo "${held_ids[*]}"
		)" "${names[@]}"
		for name in "${names[@]}"; do
			docker run -d --name "$name" --network none "$img" sh -c "$SERVICE_CMD" >/dev/null
		done
		local m_open=() m_close=() m_all=() m_down=() p_open=() p_close=() p_all=() p_down=()
		for ((r = 0; r < window_runs; r++)); do
			# mesh-host
			docker rm -f "$step" >/dev/null 2>&1 || true
			local t0=$EPOCHREALTIME
			mesh run step --local --state-dir "$wstate" --declaration "$wdecl" >/dev/null
			m_all+=("$(elapsed_us "$t0")")
			read_window "$t0" "$step" "${names[@]}"
			m_open+=("$open_us")
			m_down+=("$down_us")
			m_close+=("$close_us")
			# the peer, by hand
			docker rm -f "$step" >/dev/null 2>&1 || true
			local reversed=()
			for ((i = k - 1; i >= 0; i--)); do reversed+=("${names[i]}"); done
			t0=$EPOCHREALTIME
			docker stop "${names[@]}" >/dev/null
			docker run --name "$step" --network none "$img" sh -c 'exit 0' >/dev/null
			docker start "${reversed[@]}" >/dev/null
			p_all+=("$(elapsed_us "$t0")")
			read_window "$t0" "$step" "${names[@]}"
			p_open+=("$open_us")
			p_down+=("$down_us")
			p_close+=("$close_us")
		done
		echo "| $k | mesh-host run --local | $(stats_ms "${m_open[@]}") | $(stats_ms "${m_close[@]}") | $(stats_ms "${m_down[@]}") | $(stats_ms "${m_all[@]}") | $window_runs |"
		echo "| $k | docker CLI by hand | $(stats_ms "${p_open[@]}") | $(stats_ms "${p_close[@]}") | $(stats_ms "${p_down[@]}") | $(stats_ms "${p_all[@]}") | $window_runs |"
		docker rm -f "$step" "${names[@]}" >/dev/null
	done
}

inside_cleanup() {
	if [[ -n ${proxy_pid:-} ]]; then kill "$proxy_pid" 2>/dev/null || true; fi
	remove_prefix "$run_prefix-"
	# A network docker-compose may have made for a project.
	local nets
	nets=$(docker network ls -q --filter "name=${run_prefix//-/}")
	if [[ -n $nets ]]; then
		# shellcheck disable=SC2086
		docker network rm $nets >/dev/null 2>&1 || true
	fi
}

# mesh-host with its log (stderr) kept aside, shown if it fails.
mesh() {
	if ! "$bin" "$@" 2>"$mesh_log"; then
		cat "$mesh_log" >&2
		die "mesh-host $* failed"
	fi
}

die() {
	echo "apply-node.sh: $*" >&2
	exit 1
}

# Remove every container whose name starts with $1.
remove_prefix() {
	local ids
	ids=$(docker ps -aq --filter "name=^/$1")
	if [[ -n $ids ]]; then
		# shellcheck disable=SC2086
		docker rm -f $ids >/dev/null
	fi
}

# How many container events Docker recorded between $2 and $3 on
# containers whose name starts with $1.
events_of() {
	docker events --since "$2" --until "$3" --filter type=container \
		--format '{{.Actor.Attributes.name}} {{.Action}}' | grep -c "^$1" || true
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

# The median of per-round ratios given in thousandths, as "0.62×".
ratio_of() {
	printf '%s\n' "$@" | sort -n | awk '
		{ v[NR] = $1 }
		END {
			m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			printf "%.2f×", m / 1000
		}'
}

# Check that $2 containers whose name starts with $1 run.
expect_running() {
	local got
	got=$(docker ps -q --filter "name=^/$1" | wc -l)
	((got == $2)) || die "expected $2 running containers named $1*, found $got"
}

# Check that the apply report has $3 lines with action $2.
expect_count() {
	local got
	got=$(grep -cE "^[^ ]+ +$2(:|$)" <<<"$1" || true)
	((got >= $3)) || die "expected $3 '$2' in the report, found $got:
$1"
}

# Open and close times of the last window on $2 since $1, from Docker's
# events: open_us = step start − $1; close_us = last held start − step die;
# down_us = how long the first held container is down beyond the step's run.
read_window() {
	local t0=$1 step=$2
	shift 2
	local args=() name
	for name in "$step" "$@"; do args+=(--filter "container=$name"); done
	local events
	events=$(docker events --since "$t0" --until "$EPOCHREALTIME" --filter type=container \
		"${args[@]}" --format '{{.TimeNano}} {{.Actor.Attributes.name}} {{.Action}}')
	local t0_ns=$((${t0/./} * 1000)) step_start step_die last_start first_kill
	step_start=$(awk -v s="$step" '$2 == s && $3 == "start" { print $1; exit }' <<<"$events")
	step_die=$(awk -v s="$step" '$2 == s && $3 == "die" { print $1; exit }' <<<"$events")
	last_start=$(awk -v s="$step" '$2 != s && $3 == "start" { t = $1 } END { print t }' <<<"$events")
	first_kill=$(awk -v s="$step" '$2 != s && $3 == "kill" { print $1; exit }' <<<"$events")
	[[ -n $step_start && -n $step_die && -n $last_start && -n $first_kill ]] ||
		die "incomplete events for the window on $step:
$events"
	open_us=$(((step_start - t0_ns) / 1000))
	close_us=$(((last_start - step_die) / 1000))
	# The first held container is down from its kill to its start: all
	# of that but the step's own run.
	down_us=$(((step_start - first_kill + last_start - step_die) / 1000))
}

# A declaration of $3 busybox services named $2-1..$2-$3.
write_services() {
	local file=$1 base=$2 n=$3 img=$4 i sep=""
	{
		printf '{"declaration": 1, "resources": [\n'
		for ((i = 1; i <= n; i++)); do
			printf '%s  {"id": "s%d", "type": "container", "name": "%s-%d", "image": "%s", "command": ["sh", "-c", %s], "network": "none"}' \
				"$sep" "$i" "$base" "$i" "$img" "$(json_string "$SERVICE_CMD")"
			sep=$',\n'
		done
		printf '\n]}\n'
	} >"$file"
}

# The same services as write_services, for docker-compose (1.29, file
# format 2.4): one per container, same image, command, network and restart
# policy (`$$` is compose's escape of `$`).
write_compose() {
	local file=$1 base=$2 n=$3 img=$4 i
	{
		printf 'version: "2.4"\nservices:\n'
		for ((i = 1; i <= n; i++)); do
			printf '  s%d:\n    image: "%s"\n    container_name: "%s-%d"\n    network_mode: none\n    restart: unless-stopped\n    command: ["sh", "-c", %s]\n' \
				"$i" "$img" "$base" "$i" "$(json_string "${SERVICE_CMD//\$/\$\$}")"
		done
	} >"$file"
}

# A declaration of the held services (ids h1..hK) and a step `step` holding
# them in that order; the step exits 0 at once.
write_window() {
	local file=$1 img=$2 step=$3 holds=$4
	shift 4
	local i=1 name
	{
		printf '{"declaration": 1, "resources": [\n'
		for name in "$@"; do
			printf '  {"id": "h%d", "type": "container", "module": "m", "name": "%s", "image": "%s", "command": ["sh", "-c", %s], "network": "none"},\n' \
				"$i" "$name" "$img" "$(json_string "$SERVICE_CMD")"
			i=$((i + 1))
		done
		printf '  {"id": "step", "type": "container", "module": "m", "name": "%s", "image": "%s", "command": ["sh", "-c", "exit 0"], "network": "none", "schedule": "0 3 * * *", "while-stopped": [%s], "timeout": 300}\n' \
			"$step" "$img" "$holds"
		printf ']}\n'
	} >"$file"
}

json_string() {
	local s=${1//\\/\\\\}
	s=${s//\"/\\\"}
	printf '"%s"' "$s"
}

case ${1:-} in
--inside)
	shift
	inside "$@"
	exit 0
	;;
--cleanup)
	remove_prefix "$2-"
	exit 0
	;;
esac

# ---------------------------------------------------------------- outside
# shellcheck source=benches/node-env.sh
source "$(dirname "${BASH_SOURCE[0]}")/node-env.sh"

command -v docker-compose >/dev/null ||
	die "docker-compose (the first apply's peer) is missing: install it with tests/node/prereqs.sh"

bin=${MESH_HOST_BIN:-}
if [[ -z $bin ]]; then
	(cd "$repo" && cargo build --release --bin mesh-host >&2)
	bin=${CARGO_TARGET_DIR:-$repo/target}/release/mesh-host
fi
[[ -x $bin ]] || die "no executable at $bin"

# A directory of this run under the node's state directory (the same path
# inside and out; the machine's /tmp is not visible inside). The binary is
# copied there rather than with install-bin, which would replace the
# mesh-host that tests running alongside have installed.
prefix=mhbench-$$
dir=$state/bench/$prefix
mkdir -p "$dir"
cleanup() {
	"$node" exec bash "$dir/apply-node.sh" --cleanup "$prefix" >/dev/null 2>&1 || true
	rm -rf "$dir"
	rmdir "$state/bench" 2>/dev/null || true
}
trap cleanup EXIT
cp "$bin" "$dir/mesh-host"
before_arg=()
if [[ -n ${MESH_HOST_BIN_BEFORE:-} ]]; then
	[[ -x $MESH_HOST_BIN_BEFORE ]] || die "no executable at $MESH_HOST_BIN_BEFORE"
	cp "$MESH_HOST_BIN_BEFORE" "$dir/mesh-host-before"
	before_arg=("$dir/mesh-host-before")
fi
cp "${BASH_SOURCE[0]}" "$dir/apply-node.sh"
cat >"$dir/proxy.py" <<'EOF'
# A pass-through proxy for Docker's socket that logs each request line.
import re, socket, sys, threading
listen, target, log = sys.argv[1:4]
REQUEST = re.compile(rb"(?:^|\n)((?:GET|HEAD|POST|PUT|DELETE|PATCH) \S+) HTTP/1\.[01]\r\n")
out = open(log, "a", buffering=1)
lock = threading.Lock()
def pump(src, dst, logging):
    carry = b""
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            if logging:
                buf = carry + data
                for m in REQUEST.finditer(buf):
                    with lock:
                        out.write(m.group(1).decode() + "\n")
                carry = buf[buf.rfind(b"\n") + 1:]
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
def serve(client):
    upstream = socket.socket(socket.AF_UNIX)
    upstream.connect(target)
    threading.Thread(target=pump, args=(upstream, client, False), daemon=True).start()
    pump(client, upstream, True)
server = socket.socket(socket.AF_UNIX)
server.bind(listen)
server.listen(16)
while True:
    conn, _ = server.accept()
    threading.Thread(target=serve, args=(conn,), daemon=True).start()
EOF

echo "## mesh-host on the sandbox node ($(date -u +%Y-%m-%dT%H:%MZ))"
echo
docker_version=$("$node" exec docker version --format '{{.Server.Version}} (API {{.Server.APIVersion}})' 2>/dev/null || echo unknown)
echo "Binary: $bin ($("$bin" --version 2>/dev/null || echo "version unknown"))${MESH_HOST_BIN_BEFORE:+; before: $MESH_HOST_BIN_BEFORE}${BENCH_COMPOSE_PARALLEL:+; docker-compose $BENCH_COMPOSE_PARALLEL at a time}; Docker $docker_version, cgroup driver $(env_value MESH_NODE_CGROUP_DRIVER); load average at start: $(cut -d' ' -f1-3 /proc/loadavg). Times in ms: median (fastest–slowest run)."
echo
"$node" exec env BENCH_SIZES="${BENCH_SIZES-1 10 30 100 1000}" BENCH_HOLDS="${BENCH_HOLDS:-1 5}" \
	BENCH_CREATE_RUNS="${BENCH_CREATE_RUNS:-5}" BENCH_NOOP_RUNS="${BENCH_NOOP_RUNS:-10}" \
	BENCH_WINDOW_RUNS="${BENCH_WINDOW_RUNS:-5}" BENCH_COMPOSE_PARALLEL="${BENCH_COMPOSE_PARALLEL:-}" \
	bash "$dir/apply-node.sh" --inside "$dir" "$dir/mesh-host" "$img" "$prefix" "${before_arg[@]}"
echo
echo "Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
