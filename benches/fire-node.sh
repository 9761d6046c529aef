#!/usr/bin/env bash
# The daemon's scheduled fires on the sandbox node (tests/README.md), side by
# side with systemd timers and the docker CLI, in the same run, printed as
# Markdown tables (docs/benchmarks.md, "Fires against systemd timers"):
#
#  1. Single fire: one step `* * * * *` (the node's busybox image, command
#     `true`) fired by `mesh-host daemon`, started inside the node as a
#     transient Type=notify service with its own state directory,
#     declaration and metrics file. Lateness: Docker's `start` event of the
#     step container minus the due second (:00). Peer in the same minutes:
#     a transient systemd timer, OnCalendar `*-*-* *:*:30`,
#     AccuracySec=1us, whose oneshot service runs `docker run --rm --name X
#     IMG true`; lateness: its container's `start` event minus :30. The two
#     never overlap: mesh-host fires at :00, the timer at :30.
#  2. Burst: 30 steps, all `* * * * *`, against 30 such timers at :30; the
#     lateness of each of the 30 `start` events of a burst, over
#     BENCH_BURSTS bursts: p50 and p95 of all samples, each side.
#  3. Window overhead: 5 busybox services held (`while-stopped`, one module)
#     around a step running `sleep 2`, fired through the daemon with
#     `mesh-host run STEP` (its control socket: the same path as a
#     scheduled fire). Downtime beyond the step: from the first held
#     container's `die` to the last held container's `start`, minus the step
#     container's own run (its `start` to its `die`). Peer, rounds
#     alternating: the docker CLI by hand on 5 containers of its own,
#     `docker stop h1` … `docker stop h5` (one call each), `docker run
#     --name S IMG sleep 2`, `docker start h5` … `docker start h1`, measured
#     the same way.
#
# Every time is an event time of Docker's (`{{.TimeNano}}`), read from one
# `docker events` stream started before anything is armed (Docker keeps only
# 256 events of history). Each sample is checked: the `start` is the
# expected container's (by name, and a step's carries mesh-host's
# `mesh-host.role=step` label), one per due time, its `die` says exit 0; the
# daemon's own metrics count the succeeded fires; after every window round
# the 5 held containers run. A fire that did not happen ends the run with an
# error. Ratios and the goals are printed as text; nothing is asserted on
# a time.
#
# Usage: benches/fire-node.sh          (a node must be up: tests/node/node up)
# Environment:
#   MESH_HOST_BIN        the binary to measure (default: cargo build --release)
#   BENCH_FIRE_MINUTES   single fires, each side (default 5)
#   BENCH_BURSTS         bursts, each side (default 3)
#   BENCH_BURST_SIZE     steps and timers per burst (default 30)
#   BENCH_WINDOW_RUNS    window rounds, each of mesh-host and the CLI (default 5)
#   BENCH_PARTS          which parts to run (default "single burst window")
#
# About 10 minutes with the defaults (it waits for the wall clock's minutes).
# It never boots or powers off the node, works under its own state directory,
# unit and container name prefix, and stops and removes every unit and
# container it made, whatever happens.
set -euo pipefail

# A busybox service whose PID 1 ends at once on SIGTERM (as in
# benches/apply-node.sh).
SERVICE_CMD='trap "exit 0" TERM; while :; do sleep 1 & wait $!; done'

# ---------------------------------------------------------------- inside
# Everything below `inside` runs in the node (nsenter), where Docker's
# socket, systemd and the journal are.
inside() {
	local dir=$1 img=$3
	bin=$2 prefix=$4
	local parts=${BENCH_PARTS:-single burst window}
	units=()
	events_pid=""
	events_file=$dir/events.log
	trap inside_cleanup EXIT
	# Pulled once, so no fire measures a pull.
	docker pull -q "$img" >/dev/null
	start_events "$img"
	local part
	for part in $parts; do
		case $part in
		single) part_single "$dir" "$img" ;;
		burst) part_burst "$dir" "$img" ;;
		window) part_window "$dir" "$img" ;;
		*) die "unknown part '$part' in BENCH_PARTS (single, burst, window)" ;;
		esac
		echo
	done
	if ((${#summary[@]})); then
		echo "### Against the issue's goals"
		echo
		echo "| what | mesh-host | peer | mesh-host / peer | goal |"
		echo "|---|---|---|---|---|"
		printf '%s\n' "${summary[@]}"
	fi
}
summary=()

# Part 1: one step against one timer, BENCH_FIRE_MINUTES fires each.
part_single() {
	local dir=$1 img=$2 minutes=${BENCH_FIRE_MINUTES:-5}
	local id=${prefix//-/_}_f1 step=$prefix-f-m1 timer=$prefix-f-t1
	local decl=$dir/single.json
	write_steps "$decl" "$img" "$id:$step"
	echo "### One step \`* * * * *\` against one systemd timer"
	echo
	echo "Load average at start: $(loadavg)."
	echo
	align
	start_daemon single "$decl"
	start_timer "$prefix-f-t1" "$timer" "$img"
	local first
	first=$(first_due)
	local expect=$dir/single.expect k due
	: >"$expect"
	for ((k = 0; k < minutes; k++)); do
		due=$((first + 60 * k))
		echo "mesh-host $step $due step" >>"$expect"
		echo "timer $timer $((due + 30)) none" >>"$expect"
	done
	collect "$expect" "$((first + 60 * (minutes - 1) + 30))" >"$dir/single.out"
	expect_active "$prefix-f-t1.timer" "$prefix-single.service"
	stop_units "$prefix-f-t1.timer" "$prefix-f-t1.service"
	expect_fires single "$id" "$minutes"
	stop_units "$prefix-single.service"
	local m t
	m=$(values mesh-host "$dir/single.out")
	t=$(values timer "$dir/single.out")
	# shellcheck disable=SC2086
	{
		echo "| side | fires | median | p95 | min–max | each fire, in order | due → \`create\` | \`create\` → \`start\` |"
		echo "|---|---|---|---|---|---|---|---|"
		echo "| mesh-host daemon, step \`* * * * *\`, due :00 | $(count $m) | $(q_ms median $m) | $(q_ms p95 $m) | $(q_ms min $m)–$(q_ms max $m) | $(each_ms $m) | $(ms_cell_or_none $(creates mesh-host "$dir/single.out")) | $(ms_cell_or_none $(create_to_start mesh-host "$dir/single.out")) |"
		echo "| systemd timer \`*:*:30\`, AccuracySec=1us, \`docker run --rm\` | $(count $t) | $(q_ms median $t) | $(q_ms p95 $t) | $(q_ms min $t)–$(q_ms max $t) | $(each_ms $t) | $(ms_cell_or_none $(creates timer "$dir/single.out")) | $(ms_cell_or_none $(create_to_start timer "$dir/single.out")) |"
		echo
		echo "Lateness in ms: Docker's \`start\` event of the container minus the due second; the last two columns split it at the container's \`create\` event, median (min–max). mesh-host / timer (medians): **$(ratio "$(q median $m)" "$(q median $t)")** (the issue's goal: ≤ 0.75×)."
		summary+=("| one \`* * * * *\` step, due second → Docker \`start\` (median) | $(q_ms median $m) ms | systemd timer + \`docker run\` $(q_ms median $t) ms | $(ratio "$(q median $m)" "$(q median $t)") | ≤ 0.75× |")
	}
	echo
	echo "Load average at the end: $(loadavg)."
}

# Part 2: BENCH_BURST_SIZE steps against as many timers, BENCH_BURSTS bursts.
part_burst() {
	local dir=$1 img=$2 bursts=${BENCH_BURSTS:-3} size=${BENCH_BURST_SIZE:-30}
	local decl=$dir/burst.json pairs=() i
	for ((i = 1; i <= size; i++)); do pairs+=("${prefix//-/_}_b$i:$prefix-b-m$i"); done
	write_steps "$decl" "$img" "${pairs[@]}"
	echo "### $size steps due in the same second against $size systemd timers"
	echo
	echo "Load average at start: $(loadavg)."
	echo
	align
	start_daemon burst "$decl"
	local timers=()
	for ((i = 1; i <= size; i++)); do
		start_timer "$prefix-b-t$i" "$prefix-b-t$i" "$img"
		timers+=("$prefix-b-t$i.timer" "$prefix-b-t$i.service")
	done
	local first
	first=$(first_due)
	local expect=$dir/burst.expect k due
	: >"$expect"
	for ((k = 0; k < bursts; k++)); do
		due=$((first + 60 * k))
		for ((i = 1; i <= size; i++)); do
			echo "mesh-host $prefix-b-m$i $due step" >>"$expect"
			echo "timer $prefix-b-t$i $((due + 30)) none" >>"$expect"
		done
	done
	collect "$expect" "$((first + 60 * (bursts - 1) + 30))" >"$dir/burst.out"
	expect_active "$prefix-burst.service"
	for ((i = 1; i <= size; i++)); do expect_active "$prefix-b-t$i.timer"; done
	stop_units "${timers[@]}"
	for ((i = 1; i <= size; i++)); do expect_fires burst "${prefix//-/_}_b$i" "$bursts"; done
	stop_units "$prefix-burst.service"
	local m t
	m=$(values mesh-host "$dir/burst.out")
	t=$(values timer "$dir/burst.out")
	# shellcheck disable=SC2086
	{
		echo "| side | samples | p50 | p95 | min–max | due → \`create\` | \`create\` → \`start\` |"
		echo "|---|---|---|---|---|---|---|"
		echo "| mesh-host daemon, $size steps \`* * * * *\`, due :00 | $(count $m) | $(q_ms median $m) | $(q_ms p95 $m) | $(q_ms min $m)–$(q_ms max $m) | $(ms_cell_or_none $(creates mesh-host "$dir/burst.out")) | $(ms_cell_or_none $(create_to_start mesh-host "$dir/burst.out")) |"
		echo "| $size systemd timers \`*:*:30\` + \`docker run --rm\` | $(count $t) | $(q_ms median $t) | $(q_ms p95 $t) | $(q_ms min $t)–$(q_ms max $t) | $(ms_cell_or_none $(creates timer "$dir/burst.out")) | $(ms_cell_or_none $(create_to_start timer "$dir/burst.out")) |"
		echo
		echo "Lateness in ms of each container's \`start\` event, $bursts bursts of $size; the last two columns split it at the container's \`create\` event, median (min–max). mesh-host / timers: p50 **$(ratio "$(q median $m)" "$(q median $t)")**, p95 **$(ratio "$(q p95 $m)" "$(q p95 $t)")** (the issue's goal: p95 ≤ 0.6×)."
		summary+=("| $size steps due in the same second, p95 lateness ($bursts bursts) | $(q_ms p95 $m) ms (p50 $(q_ms median $m)) | $size systemd timers + \`docker run\` $(q_ms p95 $t) ms (p50 $(q_ms median $t)) | $(ratio "$(q p95 $m)" "$(q p95 $t)") | ≤ 0.6× |")
	}
	echo
	echo "Load average at the end: $(loadavg)."
}

# Part 3: 5 held services around a `sleep 2` step, mesh-host run against the
# docker CLI by hand, rounds alternating.
part_window() {
	local dir=$1 img=$2 runs=${BENCH_WINDOW_RUNS:-5} k=5
	local id=${prefix//-/_}_wstep step=$prefix-w-step cstep=$prefix-c-step
	local decl=$dir/window.json held=() cli=() i
	for ((i = 1; i <= k; i++)); do
		held+=("$prefix-w-h$i")
		cli+=("$prefix-c-h$i")
	done
	write_window "$decl" "$img" "$id" "$step" "${held[@]}"
	echo "### Window overhead: $k held services around a 2 s step, \`mesh-host run\` against the docker CLI by hand"
	echo
	echo "Load average at start: $(loadavg)."
	echo
	start_daemon window "$decl"
	# The daemon's start applies the declaration: the held services run.
	wait_until 60 running_is "$prefix-w-h" "$k" ||
		die "the daemon did not start the $k held services: $(docker ps -a --filter "name=^/$prefix-w-h" --format '{{.Names}} {{.Status}}')"
	for ((i = 1; i <= k; i++)); do
		docker run -d --name "${cli[i - 1]}" --network none "$img" sh -c "$SERVICE_CMD" >/dev/null
	done
	local m_open=() m_run=() m_close=() m_beyond=() m_stops=() p_open=() p_run=() p_close=() p_beyond=() p_stops=()
	local r t0 out reversed=()
	for ((i = k - 1; i >= 0; i--)); do reversed+=("${cli[i]}"); done
	for ((r = 0; r < runs; r++)); do
		# mesh-host, through its daemon; the step container it left is its
		# own business (as for a scheduled fire).
		t0=$(now_us)
		out=$("$bin" run "$id" --control-socket "$dir/control-window.sock" \
			--state-dir "$dir/state-window" --declaration "$decl" 2>&1) ||
			die "mesh-host run $id failed: $out"
		read_window "$t0" "$step" "${held[@]}"
		m_open+=("$open_us") m_run+=("$run_us") m_close+=("$close_us") m_beyond+=("$beyond_us") m_stops+=("$stops_us")
		running_is "$prefix-w-h" "$k" || die "after mesh-host's round $r, $k held services do not all run"
		# The peer, by hand; its step container from the round before is
		# removed first, untimed.
		docker rm -f "$cstep" >/dev/null 2>&1 || true
		t0=$(now_us)
		for i in "${cli[@]}"; do docker stop "$i" >/dev/null; done
		docker run --name "$cstep" --network none "$img" sleep 2 >/dev/null
		for i in "${reversed[@]}"; do docker start "$i" >/dev/null; done
		read_window "$t0" "$cstep" "${cli[@]}"
		p_open+=("$open_us") p_run+=("$run_us") p_close+=("$close_us") p_beyond+=("$beyond_us") p_stops+=("$stops_us")
		running_is "$prefix-c-h" "$k" || die "after the CLI's round $r, its $k containers do not all run"
	done
	expect_fires window "$id" "$runs"
	expect_active "$prefix-window.service"
	stop_units "$prefix-window.service"
	echo "| method | rounds | first held \`die\` → step \`start\` | of which first → last held \`die\` | the step: \`start\` → \`die\` | step \`die\` → last held \`start\` | **downtime beyond the step** |"
	echo "|---|---|---|---|---|---|---|"
	echo "| \`mesh-host run\` (daemon) | $runs | $(ms_cell "${m_open[@]}") | $(ms_cell "${m_stops[@]}") | $(ms_cell "${m_run[@]}") | $(ms_cell "${m_close[@]}") | $(ms_cell "${m_beyond[@]}") |"
	echo "| docker CLI by hand | $runs | $(ms_cell "${p_open[@]}") | $(ms_cell "${p_stops[@]}") | $(ms_cell "${p_run[@]}") | $(ms_cell "${p_close[@]}") | $(ms_cell "${p_beyond[@]}") |"
	echo
	local mb pb
	mb=$(q median "${m_beyond[@]}")
	pb=$(q median "${p_beyond[@]}")
	echo "Times in ms, median (min–max), from Docker's events. mesh-host / CLI (downtime beyond the step, medians): **$(ratio "$mb" "$pb")** (the issue's goal: ≤ 0.85×)."
	summary+=("| $k held services around a 2 s step: downtime beyond the step itself (median) | $(q_ms median "${m_beyond[@]}") ms | the docker CLI by hand (stop ×$k, run, start ×$k) $(q_ms median "${p_beyond[@]}") ms | $(ratio "$mb" "$pb") | ≤ 0.85× |")
	echo
	echo "Load average at the end: $(loadavg)."
}

inside_cleanup() {
	local u
	for u in "${units[@]}"; do systemctl stop "$u" >/dev/null 2>&1 || true; done
	for u in "${units[@]}"; do systemctl reset-failed "$u" >/dev/null 2>&1 || true; done
	if [[ -n $events_pid ]]; then kill "$events_pid" 2>/dev/null || true; fi
	remove_prefix "$prefix-"
}

# ---------------------------------------------------------------- helpers

die() {
	echo "fire-node.sh: $*" >&2
	exit 1
}

loadavg() { cut -d' ' -f1-3 /proc/loadavg; }

now_us() { echo "${EPOCHREALTIME/./}"; }

# Retry "$@" every 0.2 s for up to $1 seconds.
wait_until() {
	local end=$((SECONDS + $1))
	shift
	until "$@"; do
		((SECONDS < end)) || return 1
		sleep 0.2
	done
}

# Whether exactly $2 containers named $1* run.
running_is() {
	(($(docker ps -q --filter "name=^/$1" | wc -l) == $2))
}

remove_prefix() {
	local ids
	ids=$(docker ps -aq --filter "name=^/$1")
	if [[ -n $ids ]]; then
		# shellcheck disable=SC2086
		docker rm -f $ids >/dev/null
	fi
}

# One `docker events` stream for the whole run, proven live by a probe
# container's `create` before anything is measured.
start_events() {
	docker events --filter type=container --format \
		'{{.TimeNano}}|{{.Actor.Attributes.name}}|{{.Action}}|{{index .Actor.Attributes "mesh-host.role"}}|{{index .Actor.Attributes "exitCode"}}|{{.Actor.ID}}' \
		>"$events_file" &
	events_pid=$!
	echo "$events_pid" >"$dir/events.pid"
	# The stream may subscribe after a first probe was made: a probe made
	# again each second until one is seen.
	local i
	for ((i = 0; i < 20; i++)); do
		docker rm -f "$prefix-probe" >/dev/null 2>&1 || true
		docker create --name "$prefix-probe" --network none "$1" true >/dev/null
		wait_until 1 grep -q "|$prefix-probe|create|" "$events_file" && break
	done
	grep -q "|$prefix-probe|create|" "$events_file" ||
		die "docker events shows no event: the stream is not live"
	docker rm "$prefix-probe" >/dev/null
}

# Wait until the wall clock is between :32 and :52 of a minute, so that
# the daemon and the timers started now are armed well before the next :00
# and the next :30.
align() {
	local s
	while :; do
		printf -v s '%(%S)T' -1
		s=$((10#$s))
		((s >= 32 && s <= 52)) && return
		sleep 0.5
	done
}

# The first :00 due time (epoch seconds) at least 3 s ahead.
first_due() {
	local now
	printf -v now '%(%s)T' -1
	echo $(((now + 3) / 60 * 60 + 60))
}

# `mesh-host daemon` as a transient Type=notify service, unit $prefix-$1;
# systemd-run returns once it is ready (READY=1).
start_daemon() {
	local name=$1 decl=$2 unit=$prefix-$1
	mkdir -p "$dir/state-$name" "$dir/units-$name"
	units+=("$unit.service")
	systemd-run --quiet --unit="$unit" -p Type=notify -p NotifyAccess=main \
		-p WatchdogSec=30 -p TimeoutStartSec=120 \
		"$bin" daemon --state-dir "$dir/state-$name" --declaration "$decl" \
		--control-socket "$dir/control-$name.sock" --unit-dir "$dir/units-$name" \
		--metrics-file "$dir/metrics-$name.prom" --reconcile-interval 3600 ||
		die "the daemon did not start: $(journalctl -u "$unit" -n 30 -o cat)"
}

# A transient timer $1 (every minute at :30, AccuracySec=1us) whose oneshot
# service runs container $2 of image $3 with `docker run --rm`.
start_timer() {
	units+=("$1.timer" "$1.service")
	systemd-run --quiet --unit="$1" --on-calendar='*-*-* *:*:30' \
		--timer-property=AccuracySec=1us -p Type=oneshot \
		/usr/bin/docker run --rm --name "$2" --network none "$3" true ||
		die "cannot start the timer $1"
}

# Units $@ are still active (a daemon did not die, a timer is still armed).
expect_active() {
	local u
	for u in "$@"; do
		systemctl is-active --quiet "$u" ||
			die "$u is not active at the end of its part: $(journalctl -u "$u" -n 30 -o cat)"
	done
}

stop_units() {
	local u
	for u in "$@"; do
		systemctl stop "$u" >/dev/null 2>&1 || true
		systemctl reset-failed "$u" >/dev/null 2>&1 || true
	done
}

# The daemon of part $1 counts at least $3 succeeded fires of step $2 in its
# metrics file (it fired them, not something else).
expect_fires() {
	local file=$dir/metrics-$1.prom got
	got=$(awk -v s="step=\"$2\"" '/^mesh_host_step_fires_total\{/ && index($0, s) && index($0, "outcome=\"succeeded\"") { n += $NF } END { print n + 0 }' "$file" 2>/dev/null || echo 0)
	((got >= $3)) || die "the daemon's metrics count $got succeeded fires of $2, expected $3:
$(grep "$2" "$file" 2>/dev/null || echo "no metrics file $file")"
}

# Match the expected fires ($1: lines `side name due-seconds role`, role
# `step` or `none`) against the events; print `side lateness-µs` per fire
# once each has its `start` and its `die`. Ends the run when a fire is
# doubled, carries the wrong role or exits non-zero, or when one has not
# happened 60 s after the last due time $2.
collect() {
	local expect=$1 deadline=$(($2 + 60)) out now
	printf -v now '%(%s)T' -1
	((now >= $2 + 1)) || sleep $(($2 + 1 - now))
	while :; do
		out=$(awk -F'|' '
			FNR == NR {
				split($0, a, " ")
				n++; side[n] = a[1]; name[n] = a[2]; due[n] = a[3] * 1000000; role[n] = a[4]
				byname[a[2]] = byname[a[2]] " " n
				next
			}
			{ us = substr($1, 1, length($1) - 3) + 0 }
			$3 == "start" && ($2 in byname) {
				c = split(byname[$2], ks, " ")
				for (j = 1; j <= c; j++) {
					k = ks[j]
					if (us >= due[k] && us < due[k] + 59000000) {
						starts[k]++; at[k] = us; cid[k] = $6
						r = ($4 == "" || $4 == "<no value>") ? "none" : $4
						got_role[k] = r
					}
				}
			}
			$3 == "create" { created[$6] = us }
			$3 == "die" { died[$6] = 1; code[$6] = $5 }
			END {
				for (k = 1; k <= n; k++) {
					sec = due[k] / 1000000
					when = sprintf("%02d:%02d:%02d UTC", int(sec % 86400 / 3600), int(sec % 3600 / 60), sec % 60)
					if (starts[k] > 1) print "BAD " name[k] " started " starts[k] " times for its due time " when
					else if (starts[k] == 0) print "PENDING " name[k] " has not started for its due time " when
					else if (got_role[k] != role[k]) print "BAD " name[k] " started at " when " with role label " got_role[k] ", not " role[k]
					else if (!(cid[k] in died)) print "PENDING " name[k] " of " when " has not ended"
					else if (code[cid[k]] != "0") print "BAD " name[k] " of " when " exited " code[cid[k]]
					else print side[k], at[k] - due[k], (cid[k] in created) ? created[cid[k]] - due[k] : "none"
				}
			}' "$expect" "$events_file")
		grep -q '^BAD' <<<"$out" && die "a measured fire is not what it should be:
$(grep '^BAD' <<<"$out")"
		if ! grep -q '^PENDING' <<<"$out"; then
			printf '%s\n' "$out"
			return
		fi
		printf -v now '%(%s)T' -1
		((now < deadline)) || die "fires did not happen:
$(grep '^PENDING' <<<"$out")"
		sleep 2
	done
}

# The lateness values (µs) of side $1 in a collect output $2.
values() {
	awk -v s="$1" '$1 == s { print $2 }' "$2"
}

# The times (µs) from the due second to the `create` of the container that
# started, side $1, collect output $2 (before the due second: negative).
creates() {
	awk -v s="$1" '$1 == s && $3 != "none" { print $3 }' "$2"
}

# The times (µs) from `create` to `start` of side $1, collect output $2.
create_to_start() {
	awk -v s="$1" '$1 == s && $3 != "none" { print $2 - $3 }' "$2"
}

# "median (min–max)" in ms of the values, or — when there are none.
ms_cell_or_none() {
	if (($#)); then ms_cell "$@"; else echo "—"; fi
}

# The window after $1 (µs) on step container $2 and held containers
# $3...: sets open_us (first held die → step start), run_us (step start →
# step die), close_us (step die → last held start), beyond_us (first
# held die → last held start, minus run_us) and stops_us (first held die →
# last held die). Each held container must have
# died and started once, the step started and died once with exit 0, in
# that order.
read_window() {
	local t0=$1 step=$2
	shift 2
	local held=" $* " out end=$((SECONDS + 30))
	while :; do
		out=$(awk -F'|' -v t0="$t0" -v step="$step" -v held="$held" -v k="$#" '
			{ us = substr($1, 1, length($1) - 3) + 0 }
			us < t0 { next }
			$2 == step && $3 == "start" { ss++; s_start = us }
			$2 == step && $3 == "die" { sd++; s_die = us; s_code = $5 }
			index(held, " " $2 " ") && $3 == "die" {
				hd[$2]++
				if (!seen_die || us < first_die) first_die = us
				if (us > last_die) last_die = us
				seen_die = 1
			}
			index(held, " " $2 " ") && $3 == "start" {
				hs[$2]++
				if (us > last_start) last_start = us
			}
			END {
				for (h in hd) nd++
				for (h in hs) ns++
				if (ss != 1 || sd != 1 || nd != k || ns != k) { print "PENDING step start " ss + 0 ", die " sd + 0 "; held died " nd + 0 ", started " ns + 0 " of " k; exit }
				for (h in hd) if (hd[h] != 1 || hs[h] != 1) { print "BAD " h " died " hd[h] " and started " hs[h] " times"; exit }
				if (s_code != "0") { print "BAD the step exited " s_code; exit }
				if (!(first_die < s_start && s_die < last_start)) { print "BAD the events are not a window: held die, step start, step die, held start"; exit }
				print s_start - first_die, s_die - s_start, last_start - s_die, last_start - first_die - (s_die - s_start), last_die - first_die
			}' "$events_file")
		[[ $out == BAD* ]] && die "the window on $step is not what it should be: $out"
		[[ $out == PENDING* ]] || break
		((SECONDS < end)) || die "incomplete events for the window on $step: $out"
		sleep 0.2
	done
	read -r open_us run_us close_us beyond_us stops_us <<<"$out"
}

# A quantile of µs values: median, p95 (nearest rank), min or max.
q() {
	local which=$1
	shift
	printf '%s\n' "$@" | sort -n | awk -v w="$which" '
		{ v[NR] = $1 }
		END {
			if (NR == 0) { print "nan"; exit }
			if (w == "median") print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			else if (w == "p95") { i = int(0.95 * NR); if (i < 0.95 * NR) i++; print v[i] }
			else if (w == "min") print v[1]
			else print v[NR]
		}'
}

# The same, in ms.
q_ms() {
	awk -v v="$(q "$@")" 'BEGIN { printf "%.0f", v / 1000 }'
}

count() { echo $#; }

# "median (min–max)" in ms.
ms_cell() {
	echo "$(q_ms median "$@") ($(q_ms min "$@")–$(q_ms max "$@"))"
}

# Each value in ms, in order.
each_ms() {
	local v out=()
	for v in "$@"; do out+=("$(awk -v v="$v" 'BEGIN { printf "%.0f", v / 1000 }')"); done
	echo "${out[*]}"
}

ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f×", a / b }'
}

# A declaration of steps, each `ID:NAME`, all `* * * * *` running `true`.
write_steps() {
	local file=$1 img=$2 sep="" pair
	shift 2
	{
		printf '{"declaration": 1, "resources": [\n'
		for pair in "$@"; do
			printf '%s  {"id": "%s", "type": "container", "name": "%s", "image": "%s", "command": ["true"], "network": "none", "schedule": "* * * * *", "timeout": 50}' \
				"$sep" "${pair%%:*}" "${pair#*:}" "$img"
			sep=$',\n'
		done
		printf '\n]}\n'
	} >"$file"
}

# A declaration of held services h1..hK (names $5...) in module m and a step
# $3 (container $4) running `sleep 2` while they are held, in that order.
# Its schedule (1 January, midnight) never comes during a run: it is fired
# by `mesh-host run`.
write_window() {
	local file=$1 img=$2 id=$3 step=$4 i=1 name holds=() sep=""
	shift 4
	{
		printf '{"declaration": 1, "resources": [\n'
		for name in "$@"; do
			printf '  {"id": "h%d", "type": "container", "module": "m", "name": "%s", "image": "%s", "command": ["sh", "-c", %s], "network": "none"},\n' \
				"$i" "$name" "$img" "$(json_string "$SERVICE_CMD")"
			holds+=("$sep\"h$i\"")
			sep=", "
			i=$((i + 1))
		done
		printf '  {"id": "%s", "type": "container", "module": "m", "name": "%s", "image": "%s", "command": ["sleep", "2"], "network": "none", "schedule": "0 0 1 1 *", "while-stopped": [%s], "timeout": 300}\n' \
			"$id" "$step" "$img" "$(printf '%s' "${holds[@]}")"
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
	# What a run interrupted from outside may have left: its event stream
	# (its process id in $3/events.pid), its units and containers, all
	# named $2-*.
	pid=$(cat "$3/events.pid" 2>/dev/null || true)
	if [[ -n $pid && $(cat "/proc/$pid/comm" 2>/dev/null) == docker ]]; then
		kill "$pid" 2>/dev/null || true
	fi
	for u in $(systemctl list-units --all --plain --no-legend "$2-*" | awk '{ print $1 }'); do
		systemctl stop "$u" >/dev/null 2>&1 || true
		systemctl reset-failed "$u" >/dev/null 2>&1 || true
	done
	remove_prefix "$2-"
	exit 0
	;;
esac

# ---------------------------------------------------------------- outside
# shellcheck source=benches/node-env.sh
source "$(dirname "${BASH_SOURCE[0]}")/node-env.sh"

bin=${MESH_HOST_BIN:-}
built=""
if [[ -z $bin ]]; then
	(cd "$repo" && cargo build --release --bin mesh-host >&2)
	bin=${CARGO_TARGET_DIR:-$repo/target}/release/mesh-host
	built=" built from $(git -C "$repo" rev-parse --short HEAD)$(git -C "$repo" diff --quiet HEAD -- src Cargo.toml Cargo.lock || echo ' with local changes')"
fi
[[ -x $bin ]] || die "no executable at $bin"

# A directory of this run under the node's state directory (the same path
# inside and out; the machine's /tmp is not visible inside), with a copy of
# the binary (install-bin would replace the one tests running alongside
# use).
prefix=mhfire-$$
dir=$state/bench/$prefix
mkdir -p "$dir"
cleanup() {
	"$node" exec bash "$dir/fire-node.sh" --cleanup "$prefix" "$dir" >/dev/null 2>&1 || true
	rm -rf "$dir"
	rmdir "$state/bench" 2>/dev/null || true
}
trap cleanup EXIT
cp "$bin" "$dir/mesh-host"
cp "${BASH_SOURCE[0]}" "$dir/fire-node.sh"

echo "## Fires against systemd timers on the sandbox node ($(date -u +%Y-%m-%dT%H:%MZ))"
echo
docker_version=$("$node" exec docker version --format '{{.Server.Version}} (API {{.Server.APIVersion}})' 2>/dev/null || echo unknown)
systemd_version=$("$node" exec systemctl --version 2>/dev/null | head -1 || echo unknown)
echo "Binary: $bin$built ($("$bin" --version 2>/dev/null || echo "version unknown"), sha256 $(sha256sum "$bin" | cut -c1-12)); Docker $docker_version, cgroup driver $(env_value MESH_NODE_CGROUP_DRIVER); $systemd_version; $(nproc) cores; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)."
echo
"$node" exec env BENCH_FIRE_MINUTES="${BENCH_FIRE_MINUTES:-5}" BENCH_BURSTS="${BENCH_BURSTS:-3}" \
	BENCH_BURST_SIZE="${BENCH_BURST_SIZE:-30}" BENCH_WINDOW_RUNS="${BENCH_WINDOW_RUNS:-5}" \
	BENCH_PARTS="${BENCH_PARTS:-single burst window}" \
	bash "$dir/fire-node.sh" --inside "$dir" "$dir/mesh-host" "$img" "$prefix"
echo
echo "Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
