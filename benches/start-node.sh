#!/usr/bin/env bash
# How long Docker takes to start a created container, by one property of
# it, on the sandbox node (tests/README.md), Docker alone:
#
#   BENCH_COMPARE=age (default): by how long before its start it was
#     created, what sets how far ahead of its due time mesh-host makes a
#     step's container ready (src/schedule/ready.rs, LEAD; docs/benchmarks.md,
#     "How old the ready container is"). Kinds:
#       fresh  created 1 s before its start;
#       aged   created AGE s before its start (AGE from BENCH_AGES, one run of
#              BENCH_STARTS starts each).
#     Every start has another container's create 1-2 s before it either
#     way (the aged ones' creates fall between two starts), so Docker is
#     equally awake for both kinds; what differs is the age.
#   BENCH_COMPARE=hook: with or without Docker's network hook, both created
#     10 s before their start (docs/apply.md, "Network none on Docker").
#     Kinds:
#       hook    network `none`, as the docker CLI creates it: Docker runs
#               its libnetwork-setkey prestart hook (dockerd again);
#       nohook  network `none` and `NetworkDisabled`, as mesh-host creates
#               it: no hook.
#
# One start every BENCH_SLOT seconds, BENCH_STARTS in all per run, through
# Docker's API (curl on its socket: no CLI process in the figure), the two
# kinds alternating; both the node's busybox image, command `true`. The
# figure of a start is Docker's `start` event (`{{.TimeNano}}`) minus the
# moment the request was sent; a start without its event fails the run.
# Printed as Markdown: median, mean, min-max of each kind.
#
# Usage: benches/start-node.sh        (a node must be up: tests/node/node up)
# Environment:
#   BENCH_COMPARE  age or hook (default age)
#   BENCH_AGES     ages in seconds of the aged containers (default "10 22 30")
#   BENCH_STARTS   starts per run, half of each kind (default 40)
#   BENCH_SLOT     seconds between two starts (default 4)
# About (30 + 4 x 40) s per run. Its containers are named mhage-<pid>-*
# and removed whatever happens.
set -euo pipefail

die() {
	echo "start-node.sh: $*" >&2
	exit 1
}

# ---------------------------------------------------------------- inside
if [[ ${1:-} == --inside ]]; then
	img=$2 prefix=$3 age=$4 starts=$5 slot=$6 compare=$7
	api() { curl -sf --unix-socket /var/run/docker.sock "$@"; }
	wait_ms() { while (($(date +%s%3N) < $1)); do sleep 0.002; done; }
	create() { # name [NetworkDisabled]
		api -H 'Content-Type: application/json' \
			-d "{\"Image\":\"$img\",\"Cmd\":[\"true\"],\"NetworkDisabled\":${2:-false},\"HostConfig\":{\"NetworkMode\":\"none\"}}" \
			"http://docker/containers/create?name=$1" >/dev/null || die "cannot create $1"
	}
	cleanup() { docker rm -f $(docker ps -aq --filter "name=$prefix-") >/dev/null 2>&1 || true; }
	trap cleanup EXIT
	docker pull -q "$img" >/dev/null
	# A plan of (ms, action, name): even starts aged, odd ones fresh.
	t0=$((($(date +%s) + 2) * 1000))
	plan=$(for ((k = 0; k < starts; k++)); do
		due=$((t0 + age * 1000 + k * slot * 1000))
		if [[ $compare == hook ]]; then
			kind=$( ((k % 2 == 0)) && echo hook || echo nohook)
			echo "$((due - age * 1000)) create-$kind $prefix-$kind-$k"
		elif ((k % 2 == 0)); then
			kind=aged
			echo "$((due - age * 1000)) create $prefix-aged-$k"
		else
			kind=fresh
			echo "$((due - 1000)) create $prefix-fresh-$k"
		fi
		echo "$due start $prefix-$kind-$k"
	done | sort -n -k1,1)
	sent=()
	while read -r ms action name; do
		wait_ms "$ms"
		if [[ $action == create || $action == create-hook ]]; then
			create "$name"
		elif [[ $action == create-nohook ]]; then
			create "$name" true
		else
			at=$(date +%s%N)
			api -X POST "http://docker/containers/$name/start" >/dev/null || die "cannot start $name"
			sent+=("$name $at")
		fi
	done <<<"$plan"
	sleep 2
	events=$(docker events --since "$((t0 / 1000 - 1))" --until "$(date +%s)" \
		--filter event=start --format '{{.Actor.Attributes.name}} {{.TimeNano}}')
	for s in "${sent[@]}"; do
		read -r name at <<<"$s"
		ev=$(awk -v n="$name" '$1 == n { print $2 }' <<<"$events")
		[[ -n $ev ]] || die "no start event of $name"
		kind=${name#"$prefix"-}
		echo "${kind%%-*} $(((ev - at) / 1000000))"
	done
	exit 0
fi

# ---------------------------------------------------------------- outside
# shellcheck source=benches/node-env.sh
source "$(dirname "${BASH_SOURCE[0]}")/node-env.sh"
prefix=mhage-$$
dir=$state/bench/$prefix
mkdir -p "$dir"
trap 'rm -rf "$dir"; rmdir "$state/bench" 2>/dev/null || true' EXIT
cp "${BASH_SOURCE[0]}" "$dir/start-node.sh"

stats() { # kind file: median mean min max
	awk -v k="$1" '$1 == k { print $2 }' "$2" | sort -n |
		awk '{ a[NR] = $1; s += $1 } END { if (NR) printf "%d | %d | %d–%d | %d", a[int((NR + 1) / 2)], s / NR, a[1], a[NR], NR }'
}

docker_version=$("$node" exec docker version --format '{{.Server.Version}} (API {{.Server.APIVersion}})' 2>/dev/null || echo unknown)
compare=${BENCH_COMPARE:-age}
[[ $compare == age || $compare == hook ]] || die "BENCH_COMPARE is age or hook, not '$compare'"
docker_version=$("$node" exec docker version --format '{{.Server.Version}} (API {{.Server.APIVersion}})' 2>/dev/null || echo unknown)
if [[ $compare == hook ]]; then
	echo "## Docker's start with and without its network hook ($(date -u +%Y-%m-%dT%H:%MZ))"
else
	echo "## Docker's start by the age of the container ($(date -u +%Y-%m-%dT%H:%MZ))"
fi
echo
echo "Docker $docker_version, cgroup driver $(env_value MESH_NODE_CGROUP_DRIVER); $(nproc) cores; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)."
echo
echo "| container | median | mean | min–max | starts |"
echo "|---|---|---|---|---|"
if [[ $compare == hook ]]; then
	out=$dir/hook.txt
	"$node" exec bash "$dir/start-node.sh" --inside "$img" "$prefix" 10 \
		"${BENCH_STARTS:-40}" "${BENCH_SLOT:-4}" hook >"$out"
	echo "| network \`none\`, created as the docker CLI does: Docker's network hook | $(stats hook "$out") |"
	echo "| network \`none\` and \`NetworkDisabled\`, as mesh-host creates it: no hook | $(stats nohook "$out") |"
else
	for age in ${BENCH_AGES:-10 22 30}; do
		out=$dir/age-$age.txt
		"$node" exec bash "$dir/start-node.sh" --inside "$img" "$prefix" "$age" \
			"${BENCH_STARTS:-40}" "${BENCH_SLOT:-4}" age >"$out"
		echo "| created 1 s before (fresh, beside the $age s run) | $(stats fresh "$out") |"
		echo "| created $age s before | $(stats aged "$out") |"
	done
fi
echo
echo "Times in ms: the \`start\` request sent to Docker's \`start\` event. Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
