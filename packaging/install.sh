#!/usr/bin/env bash
# The one description of what mesh-host installs, and where: stages the
# FHS tree under DESTDIR. Both packages (packaging/build: the .deb through
# cargo-deb, the .rpm through cargo-generate-rpm) are made from this tree;
# `packaging/install.sh /` installs by hand on a node without packages.
#
#   packaging/install.sh DESTDIR [BINARY]
#
# BINARY is the mesh-host executable to install (default: the release build,
# $CARGO_TARGET_DIR/release/mesh-host). It is also run once, to generate the
# man page and shell completions from its own command line definitions.
set -euo pipefail

usage() {
	echo "usage: packaging/install.sh DESTDIR [BINARY]" >&2
	exit 2
}
(($# == 1 || $# == 2)) || usage
[[ -n $1 ]] || usage
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dest=${1%/}
bin=${2:-${CARGO_TARGET_DIR:-$repo/target}/release/mesh-host}
[[ -x $bin ]] || {
	echo "packaging/install.sh: $bin is not an executable (build it first: cargo build --release)" >&2
	exit 1
}

gen=$(mktemp -d)
trap 'rm -rf "$gen"' EXIT
# Writes mesh-host.8, mesh-host-COMMAND.8, mesh-host.bash, _mesh-host and mesh-host.fish.
"$bin" generate "$gen"

# install -D: parents are created 0755, whatever the umask.
put() { # MODE SOURCE DEST-RELATIVE-TO-DESTDIR
	install -D -m "$1" "$2" "$dest/$3"
}

put 0755 "$bin" usr/bin/mesh-host

# systemd: the service, the slice every scheduled step runs in, and the
# journal catalog explaining each MESSAGE_ID (journalctl -x).
put 0644 "$repo/units/mesh-host.service" usr/lib/systemd/system/mesh-host.service
put 0644 "$repo/units/mesh-host.slice" usr/lib/systemd/system/mesh-host.slice
put 0644 "$repo/units/mesh-host.catalog" usr/lib/systemd/catalog/mesh-host.catalog
# An example alert template for --on-alert (README "Paging"); it has no
# [Install] section and nothing starts it until the operator says so.
put 0644 "$repo/units/mesh-host-alert@.service" usr/lib/systemd/system/mesh-host-alert@.service
# Following image tags (docs/updates.md): the timer is not enabled by the
# package (the maintainer scripts handle mesh-host.service alone).
put 0644 "$repo/units/mesh-host-update.service" usr/lib/systemd/system/mesh-host-update.service
put 0644 "$repo/units/mesh-host-update.timer" usr/lib/systemd/system/mesh-host-update.timer

# The man pages, compressed as Debian policy and Fedora's guidelines want
# (-n: no name or time stamp in the header, so builds are reproducible):
# mesh-host(8), one page per command, mesh-host-declaration(5).
gz() { # SOURCE DEST-RELATIVE-TO-DESTDIR
	install -d -m 0755 "$(dirname "$dest/$2")"
	gzip -9n <"$1" >"$dest/$2"
	chmod 0644 "$dest/$2"
}
for page in "$gen"/mesh-host*.[0-9]; do
	name=$(basename "$page")
	gz "$page" "usr/share/man/man${name##*.}/$name.gz"
done

# Prometheus alerting rules on the metrics (docs/metrics.md): data for the
# operator's Prometheus to point its rule_files at, nothing loads them here.
put 0644 "$repo/packaging/prometheus/mesh-host-alerts.yml" usr/share/mesh-host/prometheus/mesh-host-alerts.yml
# A Grafana dashboard of those metrics (docs/metrics.md), to import.
put 0644 "$repo/packaging/grafana/mesh-host.json" usr/share/mesh-host/grafana/mesh-host.json

# The documentation, the license terms (machine-readable, DEP-5) and the
# changelog, where Debian policy puts them (large text compressed).
doc=usr/share/doc/mesh-host
gz "$repo/README.md" "$doc/README.md.gz"
for f in "$repo"/docs/*.md; do
	gz "$f" "$doc/docs/$(basename "$f").gz"
done
put 0644 "$repo/packaging/copyright" "$doc/copyright"
gz "$repo/packaging/changelog" "$doc/changelog.Debian.gz"

# lintian's overrides, each with its reason (docs/packaging.md).
put 0644 "$repo/packaging/lintian-overrides" usr/share/lintian/overrides/mesh-host

# Completions where each shell looks for a package's own (not /etc).
put 0644 "$gen/mesh-host.bash" usr/share/bash-completion/completions/mesh-host
put 0644 "$gen/_mesh-host" usr/share/zsh/vendor-completions/_mesh-host
put 0644 "$gen/mesh-host.fish" usr/share/fish/vendor_completions.d/mesh-host.fish

# Example declarations and what they show.
for f in "$repo"/examples/*.json "$repo/examples/README.md"; do
	put 0644 "$f" "usr/share/doc/mesh-host/examples/$(basename "$f")"
done

# The declaration (/etc/mesh-host/declaration.json) is the node's own data,
# not a file of the package: `mesh-host apply FILE` rewrites it, and
# provisioning often writes it before the package is installed. No package
# ships it (neither a dpkg conffile nor an rpm %config): their maintainer
# scripts make an empty one, 0600, only when none exists (the same lines as
# here). Installing by hand onto this machine (DESTDIR /) does the same.
decl=/etc/mesh-host/declaration.json
if [[ -z $dest && ! -e $decl && ! -L $decl ]]; then
	install -d -m 0755 /etc/mesh-host
	tmp=$(mktemp /etc/mesh-host/.declaration.json.XXXXXX)
	printf '{"declaration":1,"resources":[]}\n' >"$tmp"
	chmod 0600 "$tmp"
	mv -f "$tmp" "$decl"
fi
