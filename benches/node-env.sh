# Sourced by the node benches (apply-, fire-, idle- and start-node.sh),
# outside the node: finds the sandbox node that is up and reads its env
# file. Sets `repo`, `node` (tests/node/node), `state` (the node's state
# directory, the same path inside and out) and `img` (its busybox image),
# and defines `env_value NAME`. The sourcing script defines `die`.

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
node=$repo/tests/node/node
"$node" status >/dev/null 2>&1 || die "no sandbox node is up: start one with tests/node/node up"
env_value() { "$node" env | sed -n "s/^$1=//p"; }
state=$(env_value MESH_NODE_STATE)
img=$(env_value MESH_NODE_IMAGE_BUSYBOX)
[[ -n $state && -n $img ]] || die "the node env file lacks MESH_NODE_STATE or MESH_NODE_IMAGE_BUSYBOX"
