#!/usr/bin/env bash
# Builds the node's test images without network, serves them from a loopback
# registry inside the node, and prints the digest-pinned references as
# KEY=value lines. The pushed images are then removed from Docker's local
# store, so that a test using them proves a real pull.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

build=$NODE_BUILD_DIR
rm -rf "$build"
mkdir -p "$build"

# A root filesystem: busybox-static plus the links `busybox --install -s`
# would make (made from its applet list, without running it in a chroot).
busybox_rootfs() {
	local root=$1 applet
	mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,etc,root,proc,sys,dev}
	install -d -m 1777 "$root/tmp"
	cp /bin/busybox "$root/bin/busybox"
	while read -r applet; do
		[[ -n $applet && $applet != bin/busybox ]] || continue
		mkdir -p "$root/$(dirname "$applet")"
		ln -sfn /bin/busybox "$root/$applet"
	done < <(/bin/busybox --list-full)
	printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' \
		>"$root/etc/passwd"
	printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
}

# The distribution registry: Debian's binary, the libraries and loader it is
# linked against (as ldd names them), and a configuration.
registry_rootfs() {
	local root=$1 bin=/usr/bin/docker-registry lib
	mkdir -p "$root"/{etc/docker/registry,var/lib/registry}
	install -d -m 1777 "$root/tmp"
	cp --parents "$bin" "$root"
	for lib in $(ldd "$bin" | grep -oE '/[^ ]+'); do
		# -L: the image holds the files, not the machine's symlinks.
		cp -L --parents "$lib" "$root"
	done
	# BusyBox's wget, as the registry:2 image (Alpine) carries it: what the
	# registry example's health check runs.
	mkdir -p "$root/bin"
	cp /bin/busybox "$root/bin/busybox"
	ln -sfn busybox "$root/bin/wget"
	cat >"$root$NODE_REGISTRY_CONFIG" <<EOF
version: 0.1
log:
  level: info
storage:
  filesystem:
    rootdirectory: /var/lib/registry
  delete:
    enabled: true
http:
  addr: $NODE_REGISTRY_ADDR
EOF
}

# Streams a directory as a tar into `docker import` inside the node.
import() {
	local dir=$1 tag=$2
	shift 2
	tar --numeric-owner --owner=0 --group=0 -C "$dir" -cf - . |
		in_node docker import "$@" - "$tag" >/dev/null
}

digest_ref() {
	local repo=$NODE_REGISTRY_ADDR/$1 ref
	ref=$(in_node docker image inspect -f '{{range .RepoDigests}}{{println .}}{{end}}' "$repo:latest" |
		grep -m1 "^$repo@sha256:") || die "no digest recorded for $repo"
	printf '%s\n' "$ref"
}

busybox_rootfs "$build/busybox"
import "$build/busybox" mesh-node/busybox:build --change 'CMD ["/bin/sh"]'

# The same userland with one more file: another digest, for tests that
# change a container's image.
cp -a "$build/busybox" "$build/busybox-alt"
printf 'alt\n' >"$build/busybox-alt/etc/mesh-node-variant"
import "$build/busybox-alt" mesh-node/busybox-alt:build --change 'CMD ["/bin/sh"]'

registry_rootfs "$build/registry"
import "$build/registry" "$NODE_REGISTRY_LOCAL_IMAGE" \
	--change 'ENTRYPOINT ["/usr/bin/docker-registry"]' \
	--change "CMD [\"serve\", \"$NODE_REGISTRY_CONFIG\"]"

in_node docker rm -f "$NODE_REGISTRY_CONTAINER" >/dev/null 2>&1 || true
# The machine's loopback is shared: were the port taken (another node's
# registry), the health checks and pushes below would reach that one.
if (exec 3<>"/dev/tcp/${NODE_REGISTRY_ADDR%:*}/$NODE_REGISTRY_PORT") 2>/dev/null; then
	die "$NODE_REGISTRY_ADDR is already in use (another node's registry?): set MESH_NODE_REGISTRY_PORT"
fi
in_node docker run -d --name "$NODE_REGISTRY_CONTAINER" --network host --restart always \
	"$NODE_REGISTRY_LOCAL_IMAGE" >/dev/null
if ! wait_until 30 curl -fsS --max-time 2 "http://$NODE_REGISTRY_ADDR/v2/"; then
	in_node docker logs "$NODE_REGISTRY_CONTAINER" >&2 || true
	die "the registry did not answer on $NODE_REGISTRY_ADDR"
fi

for pair in busybox:mesh-node/busybox:build busybox-alt:mesh-node/busybox-alt:build \
	"registry:$NODE_REGISTRY_LOCAL_IMAGE"; do
	name=${pair%%:*}
	in_node docker tag "${pair#*:}" "$NODE_REGISTRY_ADDR/$name:latest"
	in_node docker push -q "$NODE_REGISTRY_ADDR/$name:latest" >/dev/null
done

busybox=$(digest_ref busybox)
busybox_alt=$(digest_ref busybox-alt)
registry=$(digest_ref registry)
[[ ${busybox#*@} != "${busybox_alt#*@}" ]] || die "busybox and busybox-alt share a digest"

# Only the registry's own image stays in the local store.
in_node docker rmi "$NODE_REGISTRY_ADDR/busybox:latest" mesh-node/busybox:build \
	"$NODE_REGISTRY_ADDR/busybox-alt:latest" mesh-node/busybox-alt:build \
	"$NODE_REGISTRY_ADDR/registry:latest" >/dev/null
rm -rf "$build"

cat <<EOF
MESH_NODE_REGISTRY=$NODE_REGISTRY_ADDR
MESH_NODE_REGISTRY_CONTAINER=$NODE_REGISTRY_CONTAINER
MESH_NODE_REGISTRY_CONFIG=$NODE_REGISTRY_CONFIG
MESH_NODE_IMAGE_BUSYBOX=$busybox
MESH_NODE_IMAGE_BUSYBOX_ALT=$busybox_alt
MESH_NODE_IMAGE_REGISTRY=$registry
EOF
