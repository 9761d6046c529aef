#!/usr/bin/env bash
# The apply at scale, through the running daemon, on the sandbox node
# (tests/README.md), printed as Markdown tables (docs/benchmarks.md, "The
# apply at scale"), every figure beside its peer of the same run:
#
#  - N busybox services (network `host`: no network hook on either side),
#    each reading an env-file and a read-only mounted file, and M scheduled
#    steps (`0 H * * *`, H twelve hours from the start: never due during
#    the run, nor armed) each holding two of them (`while-stopped`), in
#    one declaration sent to `mesh-host daemon`
#    (a transient Type=notify service of the node, WatchdogSec=30, its own
#    state directory, declaration, control socket and metrics file) with
#    `mesh-host apply FILE`;
#  - first apply (creates and starts N) against Docker's floor: the same N
#    creates (the same body mesh-host sends: image, command, env, the
#    read-only bind, labels, restart policy) and starts through the API, 16
#    at a time like the apply, by a small Python client and nothing else;
#  - no-op apply (and `mesh-host diff FILE`, when the binary has it)
#    against `docker ps -a`, rounds alternating;
#  - `mesh-host status` and `mesh-host plan STEP` (rounds alternating);
#  - idle wake-ups: voluntary context switches of all the daemon's threads
#    over BENCH_IDLE_SECONDS (30) windows, dockerd read over the same ones;
#  - resident memory (VmRSS, VmHWM) once the M steps are applied and idle,
#    before any size of the growth curve;
#  - a step's fire lateness (`* * * * *`, due :00; Docker's `start` event
#    minus the due second) with only that step declared, then beside the N
#    services alone and beside them and the M steps, a minute each in
#    turn, against a bare API start of a container made ahead, sent at :30
#    of the same minutes (its `start` event minus :30; BENCH_PEER_AT moves
#    it).
#
# With MESH_HOST_BIN_BEFORE, a second daemon of that build runs beside the
# first over its own state directory and the same declaration: its first
# applies, no-op applies, status, plan, idle wake-ups and memory are
# measured in the same rounds, as `before` columns (its fires are not).
#
# Usage: benches/scale-node.sh        (a node must be up: tests/node/node up)
# Environment:
#   MESH_HOST_BIN          the binary to measure (default: cargo build --release)
#   MESH_HOST_BIN_BEFORE   another build measured beside it (optional)
#   BENCH_SERVICES         N (default 1000)
#   BENCH_STEPS            M (default 500)
#   BENCH_CREATE_RUNS      first-apply rounds (default 1)
#   BENCH_NOOP_RUNS        no-op, diff, status and plan rounds (default 10)
#   BENCH_IDLE_RUNS        idle windows (default 3)
#   BENCH_IDLE_SECONDS     length of an idle window (default 30)
#   BENCH_FIRES            fires measured each way, one a minute (default 3;
#                          the last two ways take turns, 2 minutes a round)
#   BENCH_PEER_AT          second of the minute the peer's start is sent
#                          (default 30; a fire later than it is not found)
#   BENCH_IDLE_SETTLE      seconds waited before the idle windows (default
#                          15: tokio's idle blocking threads end after 10)
#   BENCH_CURVE            step counts applied next, in turn, beside the same N
#                          services (e.g. "500 5000 20000"): the growth curve,
#                          each size's no-op apply, diff, status and memory
#                          measured in the same run (default: none)
#   BENCH_CURVE_RUNS       no-op, diff and status rounds at each size (default 5)
#
# BENCH_CREATE_RUNS=0 applies the declaration untimed and leaves Docker's
# floor out (a smaller, quicker run while iterating).
#
# It never boots or powers off the node; its units and containers are named
# `mhscale-PID-…` and are all stopped and removed at the end, whatever
# happens. Nothing is asserted on a time.
set -euo pipefail

SERVICE_CMD='trap "exit 0" TERM; while :; do sleep 3600 & wait $!; done'

die() {
	echo "scale-node.sh: $*" >&2
	exit 1
}

# ---------------------------------------------------------------- inside
inside() {
	dir=$1 bin=$2 img=$3 prefix=$4 before=${5:-}
	local n=${BENCH_SERVICES:-1000} m=${BENCH_STEPS:-500}
	local create_runs=${BENCH_CREATE_RUNS:-1} noop_runs=${BENCH_NOOP_RUNS:-10}
	local idle_runs=${BENCH_IDLE_RUNS:-3} idle_secs=${BENCH_IDLE_SECONDS:-30}
	local fires=${BENCH_FIRES:-3}
	local curve=${BENCH_CURVE:-} curve_runs=${BENCH_CURVE_RUNS:-5}
	units=() events_pid=""
	trap inside_cleanup EXIT
	docker pull -q "$img" >/dev/null
	write_files "$n"
	write_declaration "$dir/big.json" "$n" "$m" ""
	write_declaration "$dir/bigfire.json" "$n" "$m" fire
	write_declaration "$dir/servicesfire.json" "$n" 0 fire
	write_declaration "$dir/fire.json" 0 0 fire
	printf '{"declaration": 1, "resources": [{"id": "placeholder", "type": "directory", "path": "%s/placeholder"}]}\n' "$dir" >"$dir/placeholder.json"
	has_diff=0
	"$bin" diff --help >/dev/null 2>&1 && has_diff=1

	# The daemons: `after` (the build measured), and `before` beside it.
	local sides=(after)
	[[ -z $before ]] || sides+=(before)
	declare -gA side_bin=([after]=$bin [before]=$before) side_pid=()
	local s
	start_daemon after "$dir/placeholder.json"

	# 1. Fire lateness with one step declared.
	local one_m=() one_p=()
	if ((fires > 0)); then
		mesh after apply "$dir/fire.json" >/dev/null
		measure_fires "$fires"
		one_m=("${fire_m[@]}") one_p=("${fire_p[@]}")
		mesh after apply "$dir/placeholder.json" >/dev/null
	fi
	[[ -z $before ]] || start_daemon before "$dir/placeholder.json"

	# 2. First applies against Docker's floor, rounds alternating.
	local floor=() first_a=() first_b=() r t0 out
	for ((r = 0; r < create_runs; r++)); do
		remove_prefix "$prefix-s"
		t0=$EPOCHREALTIME
		python3 "$dir/floor.py" "$dir/floor.json" 16 || die "Docker's floor failed"
		floor+=("$(elapsed_us "$t0")")
		expect_running "$prefix-x" "$n"
		remove_prefix "$prefix-x"
		if [[ -n $before ]]; then
			t0=$EPOCHREALTIME
			out=$(mesh before apply "$dir/big.json")
			first_b+=("$(elapsed_us "$t0")")
			expect_count "$out" created "$n"
			expect_running "$prefix-s" "$n"
			remove_prefix "$prefix-s"
		fi
		t0=$EPOCHREALTIME
		out=$(mesh after apply "$dir/big.json")
		first_a+=("$(elapsed_us "$t0")")
		expect_count "$out" created "$n"
		expect_running "$prefix-s" "$n"
	done
	if ((create_runs == 0)); then
		remove_prefix "$prefix-s"
		mesh after apply "$dir/big.json" >/dev/null
		expect_running "$prefix-s" "$n"
	fi
	# The before side applies it too (its containers are there: unchanged).
	[[ -z $before ]] || mesh before apply "$dir/big.json" >/dev/null

	# 3. No-op apply, diff, status, plan; rounds alternating with the peer.
	local -A t=()
	local i order=()
	for ((i = 0; i < noop_runs; i++)); do
		round_order "$i"
		for s in "${order[@]}"; do
			t0=$EPOCHREALTIME
			out=$(mesh "$s" apply "$dir/big.json")
			t[noop_$s]+="$(elapsed_us "$t0") "
			expect_count "$out" unchanged "$((n + m))"
		done
		t0=$EPOCHREALTIME
		docker ps -a >/dev/null
		t[ps]+="$(elapsed_us "$t0") "
		if ((has_diff)); then
			for s in "${order[@]}"; do
				"${side_bin[$s]}" diff --help >/dev/null 2>&1 || continue
				t0=$EPOCHREALTIME
				mesh_rc "$s" 0 diff "$dir/big.json" >/dev/null
				t[diff_$s]+="$(elapsed_us "$t0") "
			done
			t0=$EPOCHREALTIME
			docker ps -a >/dev/null
			t[ps_diff]+="$(elapsed_us "$t0") "
		fi
		for s in "${order[@]}"; do
			t0=$EPOCHREALTIME
			mesh_rc "$s" 0,3 status >/dev/null
			t[status_$s]+="$(elapsed_us "$t0") "
			t0=$EPOCHREALTIME
			mesh "$s" plan t1 >/dev/null
			t[plan_$s]+="$(elapsed_us "$t0") "
			# What any command costs before it asks the daemon anything.
			t0=$EPOCHREALTIME
			"${side_bin[$s]}" --version >/dev/null
			t[floor_$s]+="$(elapsed_us "$t0") "
		done
	done


	# 4. Idle wake-ups, every daemon and dockerd over the same windows.
	local docker_pid
	docker_pid=$(systemctl show -P MainPID docker.service)
	# Settle past the 10 s after which tokio's idle blocking threads end:
	# a thread that ends takes its switches with it (a window would count
	# fewer than none).
	sleep "${BENCH_IDLE_SETTLE:-15}"
	for ((r = 0; r < idle_runs; r++)); do
		local -A b=()
		for s in "${sides[@]}"; do b[$s]=$(switches "${side_pid[$s]}"); done
		b[docker]=$(switches "$docker_pid")
		sleep "$idle_secs"
		for s in "${sides[@]}"; do t[idle_$s]+="$(($(switches "${side_pid[$s]}") - b[$s])) "; done
		t[idle_docker]+="$(($(switches "$docker_pid") - b[docker])) "
	done
	local -A rss=() hwm=() threads=() anon=() file=()
	for s in "${sides[@]}"; do
		rss[$s]=$(awk '/^VmRSS:/ { print $2 }' "/proc/${side_pid[$s]}/status")
		anon[$s]=$(awk '/^RssAnon:/ { print $2 }' "/proc/${side_pid[$s]}/status")
		file[$s]=$(awk '/^RssFile:/ { print $2 }' "/proc/${side_pid[$s]}/status")
		hwm[$s]=$(awk '/^VmHWM:/ { print $2 }' "/proc/${side_pid[$s]}/status")
		threads[$s]=$(ls "/proc/${side_pid[$s]}/task" | wc -l)
	done

	# 4b. The growth curve, after the memory of M steps is read (a larger
	# declaration's peak would stay in it): each size of BENCH_CURVE applied in turn beside
	# the same N services (only steps change: nothing is created), then its
	# no-op apply, diff, status and status --json rounds and each daemon's
	# memory after them.
	local curve_rows=() size
	for size in $curve; do
		write_declaration "$dir/curve.json" "$n" "$size" ""
		for s in "${sides[@]}"; do mesh "$s" apply "$dir/curve.json" >/dev/null; done
		local -A c=()
		for ((i = 0; i < curve_runs; i++)); do
			round_order "$i"
			for s in "${order[@]}"; do
				t0=$EPOCHREALTIME
				out=$(mesh "$s" apply "$dir/curve.json")
				c[noop_$s]+="$(elapsed_us "$t0") "
				expect_count "$out" unchanged "$((n + size))"
			done
			t0=$EPOCHREALTIME
			docker ps -a >/dev/null
			c[ps]+="$(elapsed_us "$t0") "
			for s in "${order[@]}"; do
				if ((has_diff)) && "${side_bin[$s]}" diff --help >/dev/null 2>&1; then
					t0=$EPOCHREALTIME
					mesh_rc "$s" 0 diff "$dir/curve.json" >/dev/null
					c[diff_$s]+="$(elapsed_us "$t0") "
				fi
				t0=$EPOCHREALTIME
				mesh_rc "$s" 0,3 status >/dev/null
				c[status_$s]+="$(elapsed_us "$t0") "
				t0=$EPOCHREALTIME
				mesh_rc "$s" 0,3 status --json >/dev/null
				c[json_$s]+="$(elapsed_us "$t0") "
			done
		done
		# shellcheck disable=SC2086
		local row="| $size | $(stats_ms ${c[noop_after]}) | $(stats_ms ${c[diff_after]:-}) | $(stats_ms ${c[status_after]}) | $(stats_ms ${c[json_after]}) | $(($(rss_kib "${side_pid[after]}") / 1024)) MiB |"
		if [[ -n $before ]]; then
			# shellcheck disable=SC2086
			row+=" $(stats_ms ${c[noop_before]}) | $(stats_ms ${c[diff_before]:-}) | $(stats_ms ${c[status_before]}) | $(stats_ms ${c[json_before]}) | $(($(rss_kib "${side_pid[before]}") / 1024)) MiB |"
		fi
		# shellcheck disable=SC2086
		row+=" $(stats_ms ${c[ps]}) | $(ratio_med "${c[noop_after]}" "${c[ps]}") |"
		curve_rows+=("$row")
	done
	if [[ -n $curve ]]; then
		# Back to the declaration of M steps for what follows.
		for s in "${sides[@]}"; do mesh "$s" apply "$dir/big.json" >/dev/null; done
	fi

	# 5. Fire lateness beside the N services alone and beside them and the
	# M steps, a minute each in turn (the after side only: two daemons
	# would fire the same step). Docker's start slows beside N running
	# containers whatever declared them; what the steps add is read
	# against the minutes beside the services alone, the same containers
	# running.
	local big_m=() big_p=() svc_m=() svc_p=()
	if ((fires > 0)); then
		[[ -z $before ]] || stop_daemon before
		for ((r = 0; r < fires; r++)); do
			mesh after apply "$dir/servicesfire.json" >/dev/null
			measure_fires 1
			svc_m+=("${fire_m[@]}") svc_p+=("${fire_p[@]}")
			mesh after apply "$dir/bigfire.json" >/dev/null
			measure_fires 1
			big_m+=("${fire_m[@]}") big_p+=("${fire_p[@]}")
		done
	fi

	# The tables.
	local col_b="" sep_b=""
	[[ -z $before ]] || col_b=" before |" sep_b="---|"
	echo "### $n services (an env-file and a read-only mounted file each), $m steps holding two each, through the daemon"
	echo
	echo "| measurement | mesh-host |$col_b peer | peer is | mesh-host / peer | runs |"
	echo "|---|---|${sep_b}---|---|---|---|"
	row "first apply (creates and starts $n)" "$(stats_ms "${first_a[@]}")" "$(cell_ms "${first_b[@]}")" \
		"$(stats_ms "${floor[@]}")" "the same creates and starts through the API, 16 at a time" \
		"$(ratio_med "${first_a[*]}" "${floor[*]}")" "$create_runs"
	# shellcheck disable=SC2086
	row "no-op apply" "$(stats_ms ${t[noop_after]})" "$(cell_ms ${t[noop_before]:-})" \
		"$(stats_ms ${t[ps]})" '`docker ps -a`' "$(ratio_med "${t[noop_after]}" "${t[ps]}")" "$noop_runs"
	if ((has_diff)) && [[ -n ${t[diff_after]:-} ]]; then
		# shellcheck disable=SC2086
		row '`mesh-host diff FILE`' "$(stats_ms ${t[diff_after]})" "$(cell_ms ${t[diff_before]:-})" \
			"$(stats_ms ${t[ps_diff]})" '`docker ps -a`' "$(ratio_med "${t[diff_after]}" "${t[ps_diff]}")" "$noop_runs"
	else
		row '`mesh-host diff FILE`' "— (not in this build)" "—" "—" '`docker ps -a`' "—" 0
	fi
	# shellcheck disable=SC2086
	row '`mesh-host status`' "$(stats_ms ${t[status_after]})" "$(cell_ms ${t[status_before]:-})" "—" "" "—" "$noop_runs"
	# shellcheck disable=SC2086
	row '`mesh-host --version` (a command that asks the daemon nothing)' "$(stats_ms ${t[floor_after]})" "$(cell_ms ${t[floor_before]:-})" "—" "" "—" "$noop_runs"
	row '`mesh-host plan t1`' "$(stats_ms ${t[plan_after]})" "$(cell_ms ${t[plan_before]:-})" "—" "" "—" "$noop_runs"
	# shellcheck disable=SC2086
	row "idle: voluntary switches per ${idle_secs} s, all threads (${threads[after]})" "$(median ${t[idle_after]:-}) ($(echo ${t[idle_after]:-}))" \
		"$([[ -z $before ]] || echo "$(median ${t[idle_before]:-}) ($(echo ${t[idle_before]:-}))")" \
		"$(median ${t[idle_docker]:-})" "dockerd, the same windows" "—" "$idle_runs"
	row "resident memory, VmRSS (VmHWM)" "$((rss[after] / 1024)) MiB ($((hwm[after] / 1024)) MiB)" \
		"$([[ -z $before ]] || echo "$((rss[before] / 1024)) MiB ($((hwm[before] / 1024)) MiB)")" "—" "" "—" 1
	row "of which anonymous (RssAnon) / the binary and libraries (RssFile)" "$((anon[after] / 1024)) / $((file[after] / 1024)) MiB" \
		"$([[ -z $before ]] || echo "$((anon[before] / 1024)) / $((file[before] / 1024)) MiB")" "—" "" "—" 1
	if ((fires > 0)); then
		row "fire lateness, one step declared" "$(stats_ms "${one_m[@]}")" "$([[ -z $before ]] || echo "—")" \
			"$(stats_ms "${one_p[@]}")" "a bare API start at :${BENCH_PEER_AT:-30}" "$(ratio_med "${one_m[*]}" "${one_p[*]}")" "$fires"
		row "fire lateness, beside $n services" "$(stats_ms "${svc_m[@]}")" "$([[ -z $before ]] || echo "—")" \
			"$(stats_ms "${svc_p[@]}")" "a bare API start at :${BENCH_PEER_AT:-30}" "$(ratio_med "${svc_m[*]}" "${svc_p[*]}")" "$fires"
		row "fire lateness, beside $n services and $m steps" "$(stats_ms "${big_m[@]}")" "$([[ -z $before ]] || echo "—")" \
			"$(stats_ms "${big_p[@]}")" "a bare API start at :${BENCH_PEER_AT:-30}" "$(ratio_med "${big_m[*]}" "${big_p[*]}")" "$fires"
		row "fire lateness: beside $m steps against beside none (the same $n services)" \
			"$(ratio_med "${big_m[*]}" "${svc_m[*]}")" "$([[ -z $before ]] || echo "—")" \
			"$(ratio_med "${big_p[*]}" "${svc_p[*]}")" "the bare start's, the same minutes" "—" "$fires"
	fi
	echo
	echo "Times in ms, median (fastest–slowest run); a ratio is of the medians. State directory after the no-op applies: $(du -sk "$dir/state-after" | cut -f1) KiB."
	if ((${#curve_rows[@]} > 0)); then
		echo
		echo "### The growth curve: $n services and each number of steps in turn, $curve_runs rounds each"
		echo
		if [[ -n $before ]]; then
			echo "| steps | no-op apply | diff | status | status --json | VmRSS | before: no-op apply | before: diff | before: status | before: status --json | before: VmRSS | \`docker ps -a\` | no-op / ps |"
			echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
		else
			echo "| steps | no-op apply | diff | status | status --json | VmRSS | \`docker ps -a\` | no-op / ps |"
			echo "|---|---|---|---|---|---|---|---|"
		fi
		printf '%s\n' "${curve_rows[@]}"
	fi
}

rss_kib() {
	awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"
}

# One table row; the before cell only when a before build is measured.
row() {
	local what=$1 mine=$2 theirs=$3 peer=$4 peer_is=$5 ratio=$6 runs=$7
	if [[ -n $before ]]; then
		echo "| $what | $mine | ${theirs:-—} | $peer | $peer_is | $ratio | $runs |"
	else
		echo "| $what | $mine | $peer | $peer_is | $ratio | $runs |"
	fi
}

# Start side $1's daemon over declaration $2 (copied as its own file);
# returns once it is READY.
start_daemon() {
	local side=$1 decl=$2 unit=$prefix-$1
	mkdir -p "$dir/state-$side" "$dir/units-$side"
	cp "$decl" "$dir/declaration-$side.json"
	systemd-run --quiet --unit="$unit" -p Type=notify -p NotifyAccess=main \
		-p WatchdogSec=30 -p TimeoutStartSec=900 \
		"${side_bin[$side]}" daemon --state-dir "$dir/state-$side" \
		--declaration "$dir/declaration-$side.json" \
		--control-socket "$dir/control-$side.sock" --unit-dir "$dir/units-$side" \
		--metrics-file "$dir/metrics-$side.prom" --reconcile-interval 86400 ||
		die "cannot start ${side_bin[$side]} as $unit: $(journalctl -u "$unit" -n 20 -o cat)"
	units+=("$unit")
	side_pid[$side]=$(systemctl show -P MainPID "$unit")
}

stop_daemon() {
	systemctl stop "$prefix-$1" >/dev/null 2>&1 || true
}

# mesh-host of side $1 against its daemon, exit 0 expected.
mesh() {
	local side=$1
	shift
	mesh_rc "$side" 0 "$@"
}

# mesh-host of side $1 against its daemon; $2: the exit codes accepted
# (comma-separated).
mesh_rc() {
	local side=$1 ok=$2 rc=0
	shift 2
	"${side_bin[$side]}" --state-dir "$dir/state-$side" --declaration "$dir/declaration-$side.json" \
		--control-socket "$dir/control-$side.sock" "$@" 2>"$dir/mesh.log" || rc=$?
	if [[ ,$ok, != *,$rc,* ]]; then
		cat "$dir/mesh.log" >&2
		die "mesh-host ($side) $* exited $rc"
	fi
}

# Fires of step `fire` (due :00) and bare API starts of a container made
# ahead (sent at :$BENCH_PEER_AT, :30 unless set) over $1 minutes; sets
# fire_m and fire_p (µs).
measure_fires() {
	local count=$1 peer=$prefix-peer at_s=${BENCH_PEER_AT:-30}
	fire_m=() fire_p=()
	docker rm -f "$peer" >/dev/null 2>&1 || true
	docker create --name "$peer" --network host "$img" true >/dev/null
	local events=$dir/events.log
	: >"$events"
	docker events --filter type=container --filter event=start \
		--format '{{.TimeNano}} {{.Actor.Attributes.name}}' >"$events" &
	events_pid=$!
	sleep 1
	local now first k due
	now=$(date +%s)
	first=$(((now / 60 + 1) * 60))
	((first - now >= 5)) || first=$((first + 60))
	for ((k = 0; k < count; k++)); do
		due=$((first + 60 * k))
		sleep_until $((due + at_s))
		curl -s --unix-socket /run/docker.sock -X POST "http://d/containers/$peer/start" >/dev/null
	done
	sleep 5
	kill "$events_pid" 2>/dev/null || true
	wait "$events_pid" 2>/dev/null || true
	events_pid=""
	for ((k = 0; k < count; k++)); do
		due=$((first + 60 * k))
		local at
		at=$(awk -v n="$prefix-fire" -v lo=$((due - 1))000000000 -v hi=$((due + at_s - 1))000000000 \
			'$2 == n && $1 >= lo && $1 < hi { print $1; exit }' "$events")
		[[ -n $at ]] || die "no fire of $prefix-fire due at $(date -u -d @"$due" +%T): $(tail -n 5 "$events")"
		fire_m+=("$(((at - due * 1000000000) / 1000))")
		at=$(awk -v n="$peer" -v lo=$((due + at_s))000000000 -v hi=$((due + 60))000000000 \
			'$2 == n && $1 >= lo && $1 < hi { print $1; exit }' "$events")
		[[ -n $at ]] || die "no start of $peer at $(date -u -d @"$((due + at_s))" +%T)"
		fire_p+=("$(((at - (due + at_s) * 1000000000) / 1000))")
	done
	docker rm -f "$peer" >/dev/null 2>&1 || true
}

# Sleep until epoch second $1.
sleep_until() {
	local now=$EPOCHREALTIME
	local left
	left=$(awk -v t="$1" -v n="$now" 'BEGIN { d = t - n; printf "%.6f", (d > 0 ? d : 0) }')
	sleep "$left"
}

# Env-files and mounted files of N services.
write_files() {
	local n=$1 i
	mkdir -p "$dir/files"
	for ((i = 1; i <= n; i++)); do
		printf 'APP_ID=%d\nMODE=bench\n' "$i" >"$dir/files/s$i.env"
		printf 'id = %d\n' "$i" >"$dir/files/s$i.conf"
	done
}

# A declaration of N services and M steps (two held each), and with $4
# set, the step `fire` due every minute.
write_declaration() {
	local file=$1 n=$2 m=$3 fire=$4 i sep=""
	local cmd
	cmd=$(json_string "$SERVICE_CMD")
	# Twelve hours from now, local time: never due during the run, and far
	# beyond the hour ahead in which a step's fire is armed.
	local far_hour=$(((10#$(date +%H) + 12) % 24))
	{
		printf '{"declaration": 1, "resources": [\n'
		for ((i = 1; i <= n; i++)); do
			printf '%s  {"id": "s%d", "type": "container", "name": "%s-s%d", "image": "%s", "command": ["sh", "-c", %s], "network": "host", "env-files": ["%s/files/s%d.env"], "mounts": [{"source": "%s/files/s%d.conf", "target": "/etc/app.conf", "read-only": true}]}' \
				"$sep" "$i" "$prefix" "$i" "$img" "$cmd" "$dir" "$i" "$dir" "$i"
			sep=$',\n'
		done
		for ((i = 1; i <= m; i++)); do
			printf '%s  {"id": "t%d", "type": "container", "name": "%s-t%d", "image": "%s", "command": ["true"], "network": "host", "schedule": "0 %d * * *", "while-stopped": ["s%d", "s%d"], "timeout": 300}' \
				"$sep" "$i" "$prefix" "$i" "$img" "$far_hour" $(((2 * i - 2) % n + 1)) $(((2 * i - 1) % n + 1))
			sep=$',\n'
		done
		if [[ -n $fire ]]; then
			printf '%s  {"id": "fire", "type": "container", "name": "%s-fire", "image": "%s", "command": ["true"], "network": "host", "schedule": "* * * * *", "timeout": 60}' \
				"$sep" "$prefix" "$img"
		fi
		printf '\n]}\n'
	} >"$file"
	# The floor's containers: the same bodies, named $prefix-fI.
	[[ $file != "$dir/big.json" ]] || python3 - "$file" "$dir/floor.json" "$prefix" <<'EOF'
import json, sys
decl = json.load(open(sys.argv[1]))
out = []
for r in decl["resources"]:
    if "schedule" in r:
        continue
    env = [l for l in open(r["env-files"][0]).read().splitlines() if l and not l.startswith("#")]
    m = r["mounts"][0]
    out.append({"name": sys.argv[3] + "-x" + r["id"][1:], "body": {
        "Image": r["image"], "Cmd": r["command"], "Env": env,
        "Labels": {"mesh-host.managed": "bench-floor", "mesh-host.resource": r["id"],
                   "mesh-host.role": "service", "mesh-host.identity": "0" * 64, "mesh-host.record": "1"},
        "HostConfig": {"NetworkMode": "host", "RestartPolicy": {"Name": "unless-stopped"},
                       "Mounts": [{"Type": "bind", "Source": m["source"], "Target": m["target"], "ReadOnly": True}]}}})
json.dump(out, open(sys.argv[2], "w"))
EOF
}

# The sides in the order round $1 measures them (set in the caller's
# `order`): `after` first in even
# rounds, `before` first in odd ones, so that neither side is always the
# one measured just after the other's command (its freeing, its load on
# the two cores) or just after its own.
round_order() {
	order=("${sides[@]}")
	if (($1 % 2 == 1)) && ((${#sides[@]} == 2)); then order=("${sides[1]}" "${sides[0]}"); fi
}

json_string() {
	local s=${1//\\/\\\\}
	s=${s//\"/\\\"}
	printf '"%s"' "$s"
}

inside_cleanup() {
	if [[ -n ${events_pid:-} ]]; then kill "$events_pid" 2>/dev/null || true; fi
	local u
	for u in "${units[@]}"; do systemctl stop "$u" >/dev/null 2>&1 || true; done
	remove_prefix "$prefix-"
}

# Removes the containers named $1…, one at a time: Debian's dockerd
# 20.10.24 deadlocked three times in libnetwork (the exit handlers of
# host-network containers blocked in `endpoint.Delete` on the network's
# lock, every later request behind them) under `docker rm -f` of 1,000 of
# them at once and of 50 at a time.
remove_prefix() {
	docker ps -aq --filter "name=^/$1" | xargs -r -n 1 docker rm -f >/dev/null
}

expect_running() {
	local got
	got=$(docker ps -q --filter "name=^/$1" | wc -l)
	((got == $2)) || die "expected $2 running containers named $1*, found $got"
}

expect_count() {
	local got summed
	got=$(grep -cE "^[^ ]+ +$2(:|$| )" <<<"$1" || true)
	# A report of counts only: `apply ok: N unchanged`.
	summed=$(grep -oE "^apply ok: (.*, )?[0-9]+ $2" <<<"$1" | grep -oE "[0-9]+ $2\$" | cut -d' ' -f1 || true)
	((${summed:-0} > got)) && got=$summed
	((got >= $3)) || die "expected $3 '$2' in the report, found $got:
$(head -n 20 <<<"$1")"
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

elapsed_us() {
	local now=$EPOCHREALTIME
	echo $((${now/./} - ${1/./}))
}

stats_ms() {
	(($# > 0)) || {
		echo "—"
		return
	}
	printf '%s\n' "$@" | sort -n | awk '
		{ v[NR] = $1 }
		END {
			m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			if (m < 100000) printf "%.1f (%.1f–%.1f)", m / 1000, v[1] / 1000, v[NR] / 1000
			else printf "%.0f (%.0f–%.0f)", m / 1000, v[1] / 1000, v[NR] / 1000
		}'
}

cell_ms() {
	if (($# == 0)) || [[ -z $before ]]; then echo "—"; else stats_ms "$@"; fi
}

median_raw() {
	printf '%s\n' "$@" | sort -n | awk '
		{ v[NR] = $1 }
		END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

median() {
	printf '%s\n' "$@" | sort -n | awk '
		{ v[NR] = $1 }
		END { printf "%g", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# The ratio of the medians of two space-separated lists, as "1.23×".
ratio_med() {
	local a b
	# shellcheck disable=SC2086
	a=$(median_raw $1)
	# shellcheck disable=SC2086
	b=$(median_raw $2)
	awk -v a="$a" -v b="$b" 'BEGIN { if (b > 0) printf "%.2f×", a / b; else print "—" }'
}

case ${1:-} in
--inside)
	shift
	inside "$@"
	exit 0
	;;
esac

# ---------------------------------------------------------------- outside
# shellcheck source=benches/node-env.sh
source "$(dirname "${BASH_SOURCE[0]}")/node-env.sh"
bin=${MESH_HOST_BIN:-}
if [[ -z $bin ]]; then
	(cd "$repo" && cargo build --release --bin mesh-host >&2)
	bin=${CARGO_TARGET_DIR:-$repo/target}/release/mesh-host
fi
[[ -x $bin ]] || die "no executable at $bin"
prefix=mhscale-$$
dir=$state/bench/$prefix
mkdir -p "$dir"
cleanup() {
	"$node" exec bash -c "systemctl stop $prefix-after $prefix-before >/dev/null 2>&1; docker ps -aq --filter name=^/$prefix- | xargs -r -n 1 docker rm -f >/dev/null" || true
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
cp "${BASH_SOURCE[0]}" "$dir/scale-node.sh"
cat >"$dir/floor.py" <<'EOF'
# Docker's floor: create and start each container of a list through the
# API over its socket, WIDTH at a time, nothing else.
import http.client, json, socket, sys, threading
specs = json.load(open(sys.argv[1]))
width = int(sys.argv[2])
class Conn(http.client.HTTPConnection):
    def __init__(self):
        super().__init__("localhost")
    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect("/run/docker.sock")
def call(conn, method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    conn.request(method, path, body=data, headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    text = r.read()
    if r.status >= 300 and r.status != 304:
        raise SystemExit(f"{method} {path}: {r.status} {text[:200]!r}")
lock = threading.Lock()
todo = list(specs)
def worker():
    conn = Conn()
    while True:
        with lock:
            if not todo:
                return
            s = todo.pop(0)
        call(conn, "POST", "/containers/create?name=" + s["name"], s["body"])
        call(conn, "POST", "/containers/" + s["name"] + "/start")
threads = [threading.Thread(target=worker) for _ in range(width)]
for t in threads: t.start()
for t in threads: t.join()
EOF
echo "## The apply at scale through the daemon ($(date -u +%Y-%m-%dT%H:%MZ))"
echo
docker_version=$("$node" exec docker version --format '{{.Server.Version}} (API {{.Server.APIVersion}})' 2>/dev/null || echo unknown)
echo "Binary: $bin ($("$bin" --version 2>/dev/null || echo "version unknown"))${MESH_HOST_BIN_BEFORE:+; before: $MESH_HOST_BIN_BEFORE}; Docker $docker_version; $(nproc) cores; load average at start: $(cut -d' ' -f1-3 /proc/loadavg) ($(uptime | sed 's/^ *//')). Units and containers: \`$prefix-…\`, all removed at the end."
echo
"$node" exec env BENCH_SERVICES="${BENCH_SERVICES:-1000}" BENCH_STEPS="${BENCH_STEPS:-500}" \
	BENCH_CREATE_RUNS="${BENCH_CREATE_RUNS:-1}" BENCH_NOOP_RUNS="${BENCH_NOOP_RUNS:-10}" \
	BENCH_IDLE_RUNS="${BENCH_IDLE_RUNS:-3}" BENCH_IDLE_SECONDS="${BENCH_IDLE_SECONDS:-30}" \
	BENCH_FIRES="${BENCH_FIRES:-3}" BENCH_CURVE="${BENCH_CURVE:-}" BENCH_CURVE_RUNS="${BENCH_CURVE_RUNS:-5}" \
	BENCH_PEER_AT="${BENCH_PEER_AT:-30}" BENCH_IDLE_SETTLE="${BENCH_IDLE_SETTLE:-15}" \
	bash "$dir/scale-node.sh" --inside "$dir" "$dir/mesh-host" "$img" "$prefix" "${before_arg[@]}"
echo
echo "Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
