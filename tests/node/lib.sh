# Shared definitions of the sandbox node harness; sourced by tests/node/*.
# shellcheck shell=bash
# shellcheck disable=SC2034 # the variables are used by the scripts sourcing this

# Node state lives on the real filesystem: the node has /tmp and /run of its
# own, so nothing under those on the machine would be visible inside it.
# Another state directory makes another node, which can run beside the
# default one (see NODE_CGROUP and NODE_REGISTRY_PORT).
NODE_DEFAULT_STATE=/var/lib/mesh-host-test-node
MESH_NODE_STATE=${MESH_NODE_STATE:-$NODE_DEFAULT_STATE}
MESH_NODE_STATE=${MESH_NODE_STATE%/}
NODE_ENV_FILE=$MESH_NODE_STATE/node.env
NODE_PID_FILE=$MESH_NODE_STATE/pid
NODE_BOOT_LOG=$MESH_NODE_STATE/boot.log
# Staged content of the node's own /run, copied there before systemd starts.
NODE_RUN_DIR=$MESH_NODE_STATE/run
NODE_BIN_DIR=$MESH_NODE_STATE/bin
NODE_DOCKER_ROOT=$MESH_NODE_STATE/docker
NODE_BUILD_DIR=$MESH_NODE_STATE/build
# Podman's storage, its database and its networks (MESH_NODE_RUNTIME=podman):
# under the state directory, so that `down` leaves nothing in the machine's
# /var/lib/containers or /etc/containers.
NODE_PODMAN_ROOT=$MESH_NODE_STATE/podman
# Podman's Docker-compatible API socket inside the node, and its
# configuration (in the node's own /run, staged by boot.sh).
NODE_PODMAN_SOCKET=/run/podman/podman.sock
NODE_PODMAN_CONF_DIR=/run/mesh-node-podman
# The lock sits beside the state directory, which `down` empties.
NODE_LOCK_FILE=${MESH_NODE_STATE}.lock

# The node shares the machine's network: two nodes side by side need two
# registry ports.
NODE_REGISTRY_PORT=${MESH_NODE_REGISTRY_PORT:-5000}
# A host name of the node's own (a UTS namespace; its /etc/hostname bound
# over the machine's), for nodes side by side whose journals must tell them
# apart; empty: the machine's name.
NODE_HOSTNAME=${MESH_NODE_HOSTNAME:-}
NODE_REGISTRY_ADDR=127.0.0.1:$NODE_REGISTRY_PORT
NODE_REGISTRY_CONTAINER=mesh-node-registry
NODE_REGISTRY_CONFIG=/etc/docker/registry/config.yml
NODE_REGISTRY_LOCAL_IMAGE=mesh-node/registry:local

# The cgroup subtree the node's systemd boots in, the same path in every
# hierarchy ("" for the hierarchies' root). The node has no cgroup namespace:
# systemd takes the cgroup it starts in (less /init.scope) as its root, so a
# second node needs a subtree of its own or both would manage the same
# cgroups. The default node keeps the root, as a node on a real machine does.
if [[ $MESH_NODE_STATE == "$NODE_DEFAULT_STATE" ]]; then
	NODE_CGROUP=""
else
	NODE_CGROUP=/$(basename "$MESH_NODE_STATE")
fi

# Inside the node only Debian's tools are wanted: the machine may carry other
# builds (a newer docker client in /usr/local/bin) that do not match the node.
NODE_PATH=/usr/sbin:/usr/bin:/sbin:/bin

log() { printf 'node: %s\n' "$*" >&2; }
die() {
	printf 'node: error: %s\n' "$*" >&2
	exit 1
}

# Prints the PID (as the machine sees it) of the node's systemd if it runs,
# else fails. A stale pid file (node gone, PID reused) does not count.
node_pid() {
	local pid start
	[[ -r $NODE_PID_FILE ]] || return 1
	read -r pid start <"$NODE_PID_FILE" || return 1
	[[ $pid =~ ^[0-9]+$ ]] || return 1
	[[ -d /proc/$pid ]] || return 1
	[[ $(cat "/proc/$pid/comm" 2>/dev/null) == systemd ]] || return 1
	[[ $(proc_start_time "$pid") == "$start" ]] || return 1
	# PID 1 of another PID namespace, never the machine's own.
	[[ $(readlink "/proc/$pid/ns/pid") != $(readlink /proc/self/ns/pid) ]] || return 1
	printf '%s\n' "$pid"
}

# Start time of a process in clock ticks since boot (field 22 of stat): with
# the PID it identifies one process for good.
proc_start_time() {
	local stat
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	# The command name (field 2) may hold spaces: cut after its ')'.
	stat=${stat##*) }
	# shellcheck disable=SC2086
	set -- $stat
	printf '%s\n' "${20}"
}

# Runs a command inside the node (its PID, mount and UTS namespaces) with a clean
# environment. Standard input, output and error pass through.
in_node() {
	local pid
	pid=$(node_pid) || die "no node is running (start one with tests/node/node up)"
	nsenter -t "$pid" -p -m -u --wd=/ -- \
		env -i PATH="$NODE_PATH" HOME=/root LANG=C.UTF-8 TERM="${TERM:-dumb}" "$@"
}

# Polls a command until it succeeds or the deadline (seconds) passes.
wait_until() {
	local timeout=$1
	shift
	local deadline=$((SECONDS + timeout))
	until "$@" >/dev/null 2>&1; do
		((SECONDS < deadline)) || return 1
		sleep 0.2
	done
}

# Refuses settings that would make a node collide with another one.
check_settings() {
	[[ $MESH_NODE_STATE == /?* ]] ||
		die "MESH_NODE_STATE must be an absolute path, not '$MESH_NODE_STATE'"
	if ! [[ $NODE_REGISTRY_PORT =~ ^[0-9]{1,5}$ ]] || ((10#$NODE_REGISTRY_PORT == 0 || 10#$NODE_REGISTRY_PORT > 65535)); then
		die "MESH_NODE_REGISTRY_PORT must be a TCP port, not '$NODE_REGISTRY_PORT'"
	fi
	[[ -z $NODE_HOSTNAME || $NODE_HOSTNAME =~ ^[a-z0-9][a-z0-9-]{0,62}$ ]] ||
		die "MESH_NODE_HOSTNAME must be a host name (a-z, 0-9, -), not '$NODE_HOSTNAME'"
}

# The cgroup driver asked for, validated.
requested_cgroup_driver() {
	local driver=${MESH_NODE_CGROUP_DRIVER:-cgroupfs}
	case $driver in
	cgroupfs | systemd) printf '%s\n' "$driver" ;;
	*) die "MESH_NODE_CGROUP_DRIVER must be cgroupfs or systemd, not '$driver'" ;;
	esac
}

# The container runtime the tests talk to, validated: `docker` (default), or
# `podman`: Podman's API service beside the node's Docker, which then only
# serves the loopback registry.
requested_runtime() {
	local runtime=${MESH_NODE_RUNTIME:-docker}
	case $runtime in
	docker | podman) printf '%s\n' "$runtime" ;;
	*) die "MESH_NODE_RUNTIME must be docker or podman, not '$runtime'" ;;
	esac
}

# Reads one KEY=value line of the node env file.
env_value() {
	[[ -r $NODE_ENV_FILE ]] || return 1
	sed -n "s/^$1=//p" "$NODE_ENV_FILE" | head -n1
}

# True when the running node answers as a ready node: systemd running,
# Docker (and Podman) answering, the registry serving, the env file written.
node_healthy() {
	local state
	node_pid >/dev/null || return 1
	[[ -r $NODE_ENV_FILE ]] || return 1
	[[ $(env_value MESH_NODE_PID) == "$(node_pid)" ]] || return 1
	state=$(in_node systemctl is-system-running 2>/dev/null) || true
	[[ $state == running ]] || return 1
	in_node docker info >/dev/null 2>&1 || return 1
	if [[ $(env_value MESH_NODE_RUNTIME) == podman ]]; then
		in_node docker -H "unix://$NODE_PODMAN_SOCKET" info >/dev/null 2>&1 || return 1
	fi
	curl -fsS --max-time 5 "http://$NODE_REGISTRY_ADDR/v2/" >/dev/null 2>&1 || return 1
}
