#!/usr/bin/env bash
# Installs, from Debian's archive, what the sandbox node needs and is missing,
# plus any package named as an argument (tests/run adds its build tools), so
# that one `apt-get update` serves them all.
# The packages stay installed afterwards: they are the harness's own
# prerequisites, installed on the machine because the node shares its
# filesystem. Nothing here starts a service on the machine itself, and
# nothing it installs is left enabled there: Debian enables a package's
# services as it installs it (Prometheus on :9090, a registry on :5000,
# dockerd), so that a machine running systemd would start them at its next
# boot. The node starts what it needs itself (boot.sh).
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

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

# Every installed package, as `dpkg-query` names it.
installed_packages() { dpkg-query -W -f '${db:Status-Status} ${Package}\n' | awk '$1 == "installed" { print $2 }'; }
before=$(installed_packages)

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

# The units and init scripts of what was just installed, its dependencies
# included (what was installed before is the machine's own, left as it is).
installed=$(comm -13 <(sort <<<"$before") <(installed_packages | sort))
services=()
scripts=()
# shellcheck disable=SC2086 # $installed: one package name a word
while IFS= read -r path; do
	case $path in
	*/systemd/system/*@.*) ;; # a template: its instances are enabled by name
	/lib/systemd/system/*.* | /usr/lib/systemd/system/*.*)
		case $path in
		*.service | *.socket | *.timer | *.path) services+=("${path##*/}") ;;
		esac
		;;
	/etc/init.d/?*) scripts+=("${path##*/}") ;;
	esac
done < <(if [[ -n $installed ]]; then dpkg-query -L $installed 2>/dev/null; fi)
# Disabled as an administrator would: an upgrade of the package keeps them
# so (Debian's maintainer scripts enable only what was never disabled).
# systemctl works on the unit files whether systemd runs or not; an init
# script gets K links, which no runlevel starts.
for unit in "${services[@]}"; do
	systemctl disable --quiet "$unit" 2>/dev/null || true
done
for script in "${scripts[@]}"; do
	update-rc.d "$script" disable >/dev/null 2>&1 || true
done
left=()
for unit in "${services[@]}"; do
	if [[ $(systemctl is-enabled "$unit" 2>/dev/null) == enabled* ]]; then
		left+=("$unit")
	fi
done
for script in "${scripts[@]}"; do
	for link in /etc/rc[2-5].d/S[0-9][0-9]"$script"; do
		if [[ -e $link || -L $link ]]; then left+=("$link"); fi
	done
done
((${#left[@]} == 0)) || die "left enabled on the machine by the packages installed: ${left[*]}"
log "installed, none of their ${#services[@]} unit(s) and ${#scripts[@]} init script(s) enabled"
