#!/usr/bin/env bash
# install-pi.sh - install the real pi agent and the Node it needs, pinned, once.
#
# Installs Node 24 (npm package node@$NODE_VERSION) and
# @earendil-works/pi-coding-agent@$PI_VERSION, the versions pinned in pins.env beside
# this script (read by install-lib.sh), under ${CTXTOOL_AGENTS:-$HOME/.cache/ctxtool-agents}: node24/ and pi/.
# Later runs only check the versions. Safe from several processes at once (flock). Prints the two paths
# (node binary, pi's dist/cli.js) on stdout, one per line. Exit 0 = ready; 3 = node/npm
# missing; 4 = installed but the versions are wrong. Used by .ci/run and by the tests
# in internal/agentkit (which skip when this has not run, unless CI=true).
set -euo pipefail
ME=install-pi.sh
T=${CTXTOOL_AGENTS:-$HOME/.cache/ctxtool-agents}
. "$(dirname "$0")/install-lib.sh"
PI_PKG=@earendil-works/pi-coding-agent
NODE="$T/node24/node_modules/node/bin/node"
CLI="$T/pi/node_modules/$PI_PKG/dist/cli.js"

ready() { [ -x "$NODE" ] && [ -f "$CLI" ] && has node24 node "$NODE_VERSION" && has pi "$PI_PKG" "$PI_VERSION"; }
print() { echo "$NODE"; echo "$CLI"; }

need_npm
if ready; then print; exit 0; fi
lock
if ready; then print; exit 0; fi
npm_into node24 node "$NODE_VERSION"
npm_into pi "$PI_PKG" "$PI_VERSION" "$NODE"
ready || { echo "$ME: installed, but node $NODE_VERSION / pi $PI_VERSION are not where expected under $T" >&2; exit 4; }
print
