#!/usr/bin/env bash
# install-openclaw.sh - install the real OpenClaw and the Node it needs, pinned, once.
#
# Installs Node 24 (npm package node@$NODE_VERSION) and openclaw@$OPENCLAW_VERSION, the
# versions pinned in pins.env beside this script (read by install-lib.sh), under
# ${OPENCLAW_TOOLS:-$HOME/.cache/ctxtool-openclaw}: node24/ and oc/ (the layout
# ../shared/tools/openclaw-store/gen-store.sh uses, which then finds them installed).
# Later runs only check the versions. Safe from several processes at once (flock).
# Prints the two paths (node binary, openclaw.mjs) on stdout, one per line. Exit 0 =
# ready; 3 = node/npm missing; 4 = installed but the versions are wrong. Used by
# .ci/run and by the tests in internal/agentkit (which skip when this has not run,
# unless CI=true).
set -euo pipefail
ME=install-openclaw.sh
T=${OPENCLAW_TOOLS:-$HOME/.cache/ctxtool-openclaw}
. "$(dirname "$0")/install-lib.sh"
NODE="$T/node24/node_modules/.bin/node"
ENTRY="$T/oc/node_modules/openclaw/openclaw.mjs"

ready() { [ -x "$NODE" ] && [ -f "$ENTRY" ] && has node24 node "$NODE_VERSION" && has oc openclaw "$OPENCLAW_VERSION"; }
print() { echo "$NODE"; echo "$ENTRY"; }

need_npm
if ready; then print; exit 0; fi
lock
if ready; then print; exit 0; fi
npm_into node24 node "$NODE_VERSION"
npm_into oc openclaw "$OPENCLAW_VERSION" "$NODE"
ready || { echo "$ME: installed, but node $NODE_VERSION / openclaw $OPENCLAW_VERSION are not where expected under $T" >&2; exit 4; }
print
