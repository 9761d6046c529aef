#!/usr/bin/env bash
# Boots the node: Debian's systemd as PID 1 of a private PID and mount
# namespace, on the machine's own filesystem and network, with Docker started
# by it. The caller holds the node lock and has made sure no node runs.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

driver=$(requested_cgroup_driver)
runtime=$(requested_runtime)

# The node's configuration goes to its own /run (staged here, copied there
# before systemd starts), so the machine's /etc is left as it is: masks of the
# units the node must not run, Docker's drop-in, a volatile journal.
stage_run() {
	local units=$NODE_RUN_DIR/systemd/system unit link
	rm -rf "$NODE_RUN_DIR"
	mkdir -p "$units/docker.service.d" "$NODE_RUN_DIR/systemd/journald.conf.d"
	mask() { ln -sfn /dev/null "$units/$1"; }
	keep_out() {
		mkdir -p "$units/$1.d"
		printf '%s\n' "# Written by tests/node/boot.sh: enabled on the machine, not run in its nodes." \
			"[Unit]" "ConditionVirtualization=!container" >"$units/$1.d/10-mesh-node.conf"
	}

	# The node boots a target of its own, not the machine's default: what
	# the machine runs (its services, init scripts made units by
	# systemd-sysv-generator, rc.local) is wanted by multi-user.target,
	# which nothing pulls in here. One failing in the node would make it
	# "degraded"; one working would bind the machine's loopback ports or
	# touch its state. basic.target brings systemd's own units (journald,
	# tmpfiles, the sockets of D-Bus and Docker); the harness starts
	# Podman's API service itself.
	cat >"$units/mesh-node.target" <<EOF
# Written by tests/node/boot.sh: the sandbox node's default unit
# (systemd --unit=mesh-node.target), in place of the machine's.
[Unit]
Description=Sandbox node of mesh-host's tests
Requires=basic.target
Wants=systemd-journald.service dbus.service docker.service
After=basic.target
AllowIsolate=yes
EOF
	# What the machine enabled into the targets the node does boot
	# (sysinit, basic, sockets, timers, network-online for Docker) would
	# still start there: every unit the machine enabled but Docker's is
	# kept out of the node. Not by a mask: one in /run hides a unit file
	# of /lib, but a unit written to /etc/systemd/system comes first. A
	# drop-in applies wherever the file is: a condition the node never
	# meets, so the unit is skipped, neither started nor failed.
	for link in /etc/systemd/system/*.wants/* /etc/systemd/system/*.requires/*; do
		[[ -e $link || -L $link ]] || continue
		unit=${link##*/}
		case $unit in
		docker.service | docker.socket | *.target) ;;
		*) keep_out "$unit" ;;
		esac
	done
	for unit in \
		getty@.service serial-getty@.service autovt@.service \
		console-getty.service container-getty@.service getty-static.service \
		systemd-sysctl.service systemd-modules-load.service \
		systemd-binfmt.service proc-sys-fs-binfmt_misc.automount \
		systemd-tmpfiles-clean.timer systemd-update-utmp.service \
		apt-daily.service apt-daily.timer \
		apt-daily-upgrade.service apt-daily-upgrade.timer \
		postgresql.service postgresql@.service \
		docker-registry.service containerd.service \
		podman.service podman.socket podman-restart.service \
		podman-auto-update.service podman-auto-update.timer; do
		# The ttys and the console are the machine's: no login prompt
		# there. The kernel's sysctls, modules and binfmt handlers are
		# the machine's too, and so is /var/log/wtmp, where the node's
		# boots would be recorded. /var/tmp cleaning and apt runs would act on
		# the machine's files (and race tests/run's apt-get). dockerd
		# runs its own containerd, with its state under the node's.
		# Podman's own units would use the machine's storage: the node's
		# Podman, when asked for, is mesh-node-podman.service.
		mask "$unit"
	done
	# Podman's tmpfiles entries would make /var/lib/containers/storage/tmp
	# and /var/lib/cni/networks at boot, on the machine's filesystem.
	mkdir -p "$NODE_RUN_DIR/tmpfiles.d"
	ln -sfn /dev/null "$NODE_RUN_DIR/tmpfiles.d/podman.conf"
	# systemd's own entries remove every /var/tmp/systemd-private-* at boot
	# (`R!`): the machine's /var/tmp, shared by the machine's services and
	# every other node, whose units' private /var/tmp would go from under
	# them (a unit starting then fails with 226/NAMESPACE).
	ln -sfn /dev/null "$NODE_RUN_DIR/tmpfiles.d/systemd-tmp.conf"

	local extra=""
	if [[ $driver == systemd ]]; then
		extra=" --exec-opt native.cgroupdriver=systemd"
	fi
	cat >"$units/docker.service.d/10-mesh-node.conf" <<EOF
# Written by tests/node/boot.sh for this boot of the sandbox node.
[Service]
# The node has no network plumbing of its own: no bridge, no iptables.
# Containers use --network none or --network host. Docker's data lives in
# the node state directory so that \`node down\` leaves nothing behind.
# Networks made without a subnet take /24s of 10.64.0.0/10: Docker's
# default pools run from 172.17.0.0/16 into 192.168.0.0/16 once tests side
# by side have made fifteen networks, and then overlap the subnets the
# compose fixtures fix (mailu's 192.168.203.0/24: "Pool overlaps").
ExecStart=
ExecStart=/usr/sbin/dockerd -H fd:// --data-root=$NODE_DOCKER_ROOT --iptables=false --bridge=none --default-address-pool base=10.64.0.0/10,size=24$extra
EOF
	cat >"$NODE_RUN_DIR/systemd/journald.conf.d/10-mesh-node.conf" <<EOF
# Written by tests/node/boot.sh. The journal of a node lives in its own /run
# and ends with it, instead of piling up in the machine's /var/log/journal.
[Journal]
Storage=volatile
EOF
}

# MESH_NODE_RUNTIME=podman: Podman's API service as a unit of the node, with
# its configuration in the node's /run (given to every unit through
# CONTAINERS_* variables, so that nothing is written under the machine's
# /etc/containers) and its
# storage, database and networks under the state directory.
stage_podman() {
	local conf=$NODE_RUN_DIR${NODE_PODMAN_CONF_DIR#/run}
	mkdir -p "$conf" "$NODE_PODMAN_ROOT"
	cat >"$conf/containers.conf" <<EOF
# Written by tests/node/boot.sh for this boot of the sandbox node.
[containers]
# No bridge in the node (as for its Docker): a container without a declared
# network gets none, not a netavark bridge in the machine's network
# namespace, which the node shares.
netns = "none"
[network]
network_backend = "netavark"
network_config_dir = "$NODE_PODMAN_ROOT/networks"
[engine]
cgroup_manager = "$driver"
events_logger = "journald"
runtime = "crun"
static_dir = "$NODE_PODMAN_ROOT/storage/libpod"
volume_path = "$NODE_PODMAN_ROOT/storage/volumes"
tmp_dir = "/run/libpod"
EOF
	cat >"$conf/storage.conf" <<EOF
# Written by tests/node/boot.sh for this boot of the sandbox node.
[storage]
driver = "overlay"
graphroot = "$NODE_PODMAN_ROOT/storage"
runroot = "/run/containers/storage"
EOF
	cat >"$conf/registries.conf" <<EOF
# Written by tests/node/boot.sh: the node's loopback registry, plain HTTP.
unqualified-search-registries = []
[[registry]]
location = "$NODE_REGISTRY_ADDR"
insecure = true
EOF
	# Every unit of the node gets the configuration, not only the API
	# service: Podman runs health checks as transient units of systemd
	# (\`podman healthcheck run ID\`), which would otherwise look for the
	# container in the machine's /var/lib/containers.
	mkdir -p "$NODE_RUN_DIR/systemd/system.conf.d"
	cat >"$NODE_RUN_DIR/systemd/system.conf.d/10-mesh-node-podman.conf" <<EOF
# Written by tests/node/boot.sh for this boot of the sandbox node.
[Manager]
DefaultEnvironment=CONTAINERS_CONF=$NODE_PODMAN_CONF_DIR/containers.conf CONTAINERS_STORAGE_CONF=$NODE_PODMAN_CONF_DIR/storage.conf CONTAINERS_REGISTRIES_CONF=$NODE_PODMAN_CONF_DIR/registries.conf
EOF
	cat >"$NODE_RUN_DIR/systemd/system/mesh-node-podman.service" <<EOF
# Written by tests/node/boot.sh: Podman's Docker-compatible API on its socket,
# served as Podman's own podman.service does (Delegate, KillMode=process).
[Unit]
Description=Podman API service of the sandbox node
[Service]
Type=exec
Delegate=true
KillMode=process
RuntimeDirectory=podman
ExecStart=/usr/bin/podman --log-level=info system service --time=0 unix://$NODE_PODMAN_SOCKET
EOF
}

# Shell run as the new namespace's first process, before systemd. It gives the
# node a /tmp of its own (boot-time tmpfiles empties /tmp, which must not be
# the machine's), a /run of its own holding the staged configuration, and a /dev
# of its own (systemd and journald would otherwise put /dev/log, /dev/initctl
# and their console output on the machine's), whose console is the boot log.
read -r -d '' init_script <<'EOF' || true
set -e
staged_run=$1 console_log=$2 hostname=$3
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /tmp
mount -t tmpfs -o mode=755,nosuid,nodev tmpfs /run
cp -a "$staged_run"/. /run/
if [ -n "$hostname" ]; then
	# In the node's own UTS namespace; systemd sets it again from
	# /etc/hostname, which is the machine's unless bound over.
	printf '%s\n' "$hostname" >/proc/sys/kernel/hostname
	printf '%s\n' "$hostname" >/run/mesh-node-hostname
	mount --bind /run/mesh-node-hostname /etc/hostname
fi
mount -t tmpfs -o mode=755,nosuid tmpfs /dev
for spec in null:1:3 zero:1:5 full:1:7 random:1:8 urandom:1:9 tty:5:0; do
	name=${spec%%:*} majmin=${spec#*:}
	mknod -m 666 "/dev/$name" c "${majmin%:*}" "${majmin#*:}"
done
mkdir /dev/pts /dev/shm
mount -t devpts -o newinstance,ptmxmode=0666,mode=620,gid=5 devpts /dev/pts
ln -s pts/ptmx /dev/ptmx
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /dev/shm
ln -s /proc/self/fd /dev/fd
ln -s /proc/self/fd/0 /dev/stdin
ln -s /proc/self/fd/1 /dev/stdout
ln -s /proc/self/fd/2 /dev/stderr
: >/dev/console
mount --bind "$console_log" /dev/console
exec /lib/systemd/systemd --system --unit=mesh-node.target
EOF

# The mounted cgroup hierarchies of the machine (v1 controllers, name=systemd,
# the unified one).
cgroup_mounts() { awk '$3 == "cgroup" || $3 == "cgroup2" { print $2 }' /proc/self/mounts; }

# A node in a cgroup subtree of its own finds it free of processes: another
# live node there would have its cgroups managed twice.
check_cgroup_free() {
	[[ -n $NODE_CGROUP ]] || return 0
	local mnt procs
	for mnt in $(cgroup_mounts); do
		[[ -d $mnt$NODE_CGROUP ]] || continue
		procs=$(find "$mnt$NODE_CGROUP" -name cgroup.procs -exec cat {} + 2>/dev/null | head -n 5)
		[[ -z $procs ]] ||
			die "cgroup $mnt$NODE_CGROUP holds processes (${procs//$'\n'/ }): is another node with a state directory named $(basename "$MESH_NODE_STATE") up?"
	done
}

# Moves the calling process into the node's cgroup subtree, the same path in
# every hierarchy, where the node's systemd then starts and takes its root.
enter_node_cgroup() {
	[[ -n $NODE_CGROUP ]] || return 0
	local mnt dir
	for mnt in $(cgroup_mounts); do
		dir=$mnt$NODE_CGROUP
		mkdir -p "$dir"
		# A new v1 cpuset has no CPUs nor memory nodes: give it its parent's.
		if [[ -f $dir/cpuset.cpus && -z $(cat "$dir/cpuset.cpus") ]]; then
			cat "$mnt/cpuset.cpus" >"$dir/cpuset.cpus"
			cat "$mnt/cpuset.mems" >"$dir/cpuset.mems"
		fi
		echo "$BASHPID" >"$dir/cgroup.procs"
	done
}

boot() {
	local unshare_pid child="" deadline
	mkdir -p "$MESH_NODE_STATE" "$NODE_BIN_DIR" "$NODE_DOCKER_ROOT"
	: >"$NODE_BOOT_LOG"
	check_cgroup_free
	# shellcheck disable=SC2094 # the log is only an argument and the output
	(
		enter_node_cgroup
		uts=()
		[[ -z $NODE_HOSTNAME ]] || uts=(--uts)
		exec setsid unshare --pid --fork --mount --mount-proc --propagation private "${uts[@]}" \
			env -i container=unshare PATH="$NODE_PATH" \
			/bin/sh -c "$init_script" mesh-node-init "$NODE_RUN_DIR" "$NODE_BOOT_LOG" "$NODE_HOSTNAME"
	) </dev/null >>"$NODE_BOOT_LOG" 2>&1 9>&- &
	unshare_pid=$!

	# unshare forks the namespace's first process: that child becomes
	# systemd once the init script execs it.
	deadline=$((SECONDS + 20))
	while ((SECONDS < deadline)); do
		child=$(cat "/proc/$unshare_pid/task/$unshare_pid/children" 2>/dev/null || true)
		child=${child%% *}
		if [[ -n $child && $(cat "/proc/$child/comm" 2>/dev/null) == systemd ]]; then
			break
		fi
		kill -0 "$unshare_pid" 2>/dev/null || break
		child=""
		sleep 0.1
	done
	if [[ -z $child ]]; then
		tail -n 30 "$NODE_BOOT_LOG" >&2 || true
		die "systemd did not start (boot log: $NODE_BOOT_LOG)"
	fi
	printf '%s %s\n' "$child" "$(proc_start_time "$child")" >"$NODE_PID_FILE"
	log "systemd is PID $child on the machine"
}

wait_running() {
	local state="" deadline=$((SECONDS + 120))
	while ((SECONDS < deadline)); do
		node_pid >/dev/null || {
			tail -n 30 "$NODE_BOOT_LOG" >&2 || true
			die "systemd exited during boot (boot log: $NODE_BOOT_LOG)"
		}
		state=$(in_node systemctl is-system-running 2>/dev/null) || true
		case $state in
		running) return 0 ;;
		degraded) break ;;
		esac
		sleep 0.3
	done
	log "systemd says '${state:-nothing}' instead of running; failed units:"
	in_node systemctl --failed --no-pager >&2 || true
	local unit
	for unit in $(in_node systemctl --failed --plain --no-legend 2>/dev/null | awk '{print $1}'); do
		in_node journalctl -b --no-pager -n 15 -u "$unit" >&2 || true
	done
	die "the node is not running cleanly; mask what cannot work here in tests/node/boot.sh"
}

wait_docker() {
	if ! wait_until 60 in_node docker info; then
		in_node journalctl -b --no-pager -n 40 -u docker.service >&2 || true
		die "Docker did not answer inside the node"
	fi
	local got
	got=$(in_node docker info -f '{{.CgroupDriver}}')
	[[ $got == "$driver" ]] || die "Docker's cgroup driver is '$got', asked for '$driver'"
}

# Starts the node's Podman; its socket must answer with the driver asked for.
start_podman() {
	in_node systemctl start mesh-node-podman.service || {
		in_node journalctl -b --no-pager -n 40 -u mesh-node-podman.service >&2 || true
		die "mesh-node-podman.service did not start"
	}
	if ! wait_until 60 in_node docker -H "unix://$NODE_PODMAN_SOCKET" info; then
		in_node journalctl -b --no-pager -n 40 -u mesh-node-podman.service >&2 || true
		die "Podman's API did not answer on $NODE_PODMAN_SOCKET inside the node"
	fi
	local got
	got=$(in_node docker -H "unix://$NODE_PODMAN_SOCKET" info -f '{{.CgroupDriver}}')
	[[ $got == "$driver" ]] || die "Podman's cgroup manager is '$got', asked for '$driver'"
}

stage_run
if [[ $runtime == podman ]]; then
	stage_podman
fi
boot
wait_running
log "systemd is running"
wait_docker
log "Docker answers (cgroup driver $driver)"
if [[ $runtime == podman ]]; then
	start_podman
	log "Podman answers on $NODE_PODMAN_SOCKET (cgroup manager $driver)"
fi
