#!/usr/bin/env bash
# How long Docker takes to start a created container, by how long before it
# was created: what sets how far ahead of its due time mesh-host makes a
# step's container ready (src/schedule/ready.rs, LEAD; docs/benchmarks.md,
# "How old the ready container is").
#
# On the sandbox node (tests/README.md), one start every BENCH_SLOT seconds,
# BENCH_STARTS in all, through Docker's API (curl on its socket: no CLI
# process in the figure). Starts alternate between two kinds of container,
# both the node's busybox image, command `true`, network `none`:
#   fresh  created 1 s before its start;
#   aged   created AGE s before its start (AGE from BENCH_AGES, one run of
#          BENCH_STARTS starts each).
# Every start has another container's create 1-2 s before it either way
# (the aged ones' creates fall between two starts), so Docker is equally
# awake for both kinds; what differs is the age of the container started.
# The figure of a start is Docker's `start` event (`{{.TimeNano}}`) minus
# the moment the request was sent; a start without its event fails the
# run. Printed as Markdown: median, mean, min-max of each kind, per AGE.
#
# Usage: benches/start-age-node.sh        (a node must be up: tests/node/node up)
# Environment:
#   BENCH_AGES     ages in seconds of the aged containers (default "10 22 30")
#   BENCH_STARTS   starts per age, half of each kind (default 40)
#   BENCH_SLOT     seconds between two starts (default 4)
# About (30 + 4 x 40) s per age. Its containers are named mhage-<pid>-*
# and removed whatever happens.
set -euo pipefail

die() {
	echo "start-age-node.sh: $*" >&2
	exit 1
}

# ---------------------------------------------------------------- inside
if [[ ${1:-} == --inside ]]; then
	img=$2 prefix=$3 age=$4 starts=$5 slot=$6
	api() { curl -sf --unix-socket /var/run/docker.sock "$@"; }
	wait_ms() { while (($(date +%s%3N) < $1)); do sleep 0.002; done; }
	create() {
		api -H 'Content-Type: application/json' \
			-d "{\"Image\":\"$img\",\"Cmd\":[\"true\"],\"HostConfig\":{\"NetworkMode\":\"none\"}}" \
			"http://docker/containers/create?name=$1" >/dev/null || die "cannot create $1"
	}
	cleanup() { docker rm -f $(docker ps -aq --filter "name=$prefix-") >/dev/null 2>&1 || true; }
	trap cleanup EXIT
	docker pull -q "$img" >/dev/null
	# A plan of (ms, action, name): even starts aged, odd ones fresh.
	t0=$((($(date +%s) + 2) * 1000))
	plan=$(for ((k = 0; k < starts; k++)); do
		due=$((t0 + age * 1000 + k * slot * 1000))
		if ((k % 2 == 0)); then
			echo "$((due - age * 1000)) create $prefix-aged-$k"
		else
			echo "$((due - 1000)) create $prefix-fresh-$k"
		fi
		echo "$due start $prefix-$([[ $((k % 2)) == 0 ]] && echo aged || echo fresh)-$k"
	done | sort -n -k1,1)
	sent=()
	while read -r ms action name; do
		wait_ms "$ms"
		if [[ $action == create ]]; then
			create "$name"
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
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
node=$repo/tests/node/node
"$node" status >/dev/null 2>&1 || die "no sandbox node is up: start one with tests/node/node up"
env_value() { "$node" env | sed -n "s/^$1=//p"; }
state=$(env_value MESH_NODE_STATE)
img=$(env_value MESH_NODE_IMAGE_BUSYBOX)
[[ -n $state && -n $img ]] || die "the node env file lacks MESH_NODE_STATE or MESH_NODE_IMAGE_BUSYBOX"
prefix=mhage-$$
dir=$state/bench/$prefix
mkdir -p "$dir"
trap 'rm -rf "$dir"; rmdir "$state/bench" 2>/dev/null || true' EXIT
cp "${BASH_SOURCE[0]}" "$dir/start-age-node.sh"

stats() { # kind file: median mean min max
	awk -v k="$1" '$1 == k { print $2 }' "$2" | sort -n |
		awk '{ a[NR] = $1; s += $1 } END { if (NR) printf "%d | %d | %d–%d | %d", a[int((NR + 1) / 2)], s / NR, a[1], a[NR], NR }'
}

docker_version=$("$node" exec docker version --format '{{.Server.Version}} (API {{.Server.APIVersion}})' 2>/dev/null || echo unknown)
echo "## Docker's start by the age of the container ($(date -u +%Y-%m-%dT%H:%MZ))"
echo
echo "Docker $docker_version, cgroup driver $(env_value MESH_NODE_CGROUP_DRIVER); $(nproc) cores; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)."
echo
echo "| created before its start | median | mean | min–max | starts |"
echo "|---|---|---|---|---|"
for age in ${BENCH_AGES:-10 22 30}; do
	out=$dir/age-$age.txt
	"$node" exec bash "$dir/start-age-node.sh" --inside "$img" "$prefix" "$age" \
		"${BENCH_STARTS:-40}" "${BENCH_SLOT:-4}" >"$out"
	echo "| 1 s (fresh, beside the $age s run) | $(stats fresh "$out") |"
	echo "| $age s | $(stats aged "$out") |"
done
echo
echo "Times in ms: the \`start\` request sent to Docker's \`start\` event. Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
