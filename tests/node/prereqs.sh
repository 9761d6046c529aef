#!/usr/bin/env bash
# Installs, from Debian's archive, what the sandbox node needs and is missing,
# plus any package named as an argument (tests/run adds its build tools), so
# that one `apt-get update` serves them all.
# The packages stay installed afterwards: they are the harness's own
# prerequisites, installed on the machine because the node shares its
# filesystem. Nothing here starts a service on the machine itself.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# Debian's docker-registry package enables a registry with basic auth on :5000
# and the node boots every unit enabled on the real filesystem: mask it before
# the package can enable it.
if [[ ! -L /etc/systemd/system/docker-registry.service ]]; then
	mkdir -p /etc/systemd/system
	ln -sf /dev/null /etc/systemd/system/docker-registry.service
fi

packages=(
	systemd dbus          # the node's PID 1 and its system bus
	docker.io             # Docker 20.10 (dockerd, containerd, runc)
	busybox-static        # the test image's whole userland
	docker-registry       # distribution 2.8: the loopback image registry
	util-linux            # unshare, nsenter, setsid, setpriv
	acl                   # getfacl: shared folders' entries checked by the tests
	curl                  # registry health checks
	prometheus            # promtool check metrics (tests/operators_node.rs)
	docker-compose        # the peer of benches/apply-node.sh's first apply
	podman crun conmon    # Podman 4.3's Docker-compatible API (MESH_NODE_RUNTIME=podman)
	netavark              # Podman's network backend, even for --network none/host
	aardvark-dns          # Podman's names on a user-defined network (tests/compose_node.rs)
	catatonit             # Podman's init for `init: true` (a container option)
	ca-certificates
	mandoc                # mandoc -Tlint on the generated man pages (tests/man.rs)
	lintian               # Debian's checks on the .deb (tests/package_node.rs)
	python3-venv          # the virtual environment of a pinned ansible (tests/fleet_node.rs)
	systemd-journal-remote # the central collector of tests/fleet_node.rs
	"$@"
)
missing=()
for p in "${packages[@]}"; do
	if [[ $(dpkg-query -W -f '${db:Status-Status}' "$p" 2>/dev/null) != installed ]]; then
		missing+=("$p")
	fi
done
if ((${#missing[@]} == 0)); then
	exit 0
fi

log "installing ${missing[*]}"
# invoke-rc.d would otherwise start dockerd and friends on the machine itself
# (no systemd there: it falls back to the init scripts). The node starts them.
created_policy=""
if [[ ! -e /usr/sbin/policy-rc.d ]]; then
	printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
	chmod 755 /usr/sbin/policy-rc.d
	created_policy=1
fi
cleanup() { [[ -z $created_policy ]] || rm -f /usr/sbin/policy-rc.d; }
trap cleanup EXIT

export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
