#!/usr/bin/env bash
# install-pi.sh - install the real pi agent and the Node it needs, pinned, once.
#
# Installs Node 24 (npm package node@$NODE_VERSION) and
# @earendil-works/pi-coding-agent@$PI_VERSION, the versions pinned in pins.env beside
# this script, under ${CTXTOOL_AGENTS:-$HOME/.cache/ctxtool-agents}: node24/ and pi/.
# Later runs only check the versions. Safe from several processes at once (flock). Prints the two paths
# (node binary, pi's dist/cli.js) on stdout, one per line. Exit 0 = ready; 3 = node/npm
# missing; 4 = installed but the versions are wrong. Used by .ci/run and by the tests
# in internal/agentkit (which skip when this has not run, unless CI=true).
set -euo pipefail
. "$(dirname "$0")/pins.env"
PI_PKG=@earendil-works/pi-coding-agent
T=${CTXTOOL_AGENTS:-$HOME/.cache/ctxtool-agents}
NODE="$T/node24/node_modules/node/bin/node"
CLI="$T/pi/node_modules/$PI_PKG/dist/cli.js"

version_of() { # package.json path -> version (any node will do)
	node -e 'try{process.stdout.write(require(process.argv[1]).version)}catch(e){}' "$1" 2>/dev/null
}
ready() {
	[ -x "$NODE" ] && [ -f "$CLI" ] &&
		[ "$(version_of "$T/node24/node_modules/node/package.json")" = "$NODE_VERSION" ] &&
		[ "$(version_of "$T/pi/node_modules/$PI_PKG/package.json")" = "$PI_VERSION" ]
}
print() { echo "$NODE"; echo "$CLI"; }

command -v node >/dev/null 2>&1 || { echo "install-pi.sh: node is not installed (any version; it bootstraps node@$NODE_VERSION)" >&2; exit 3; }
command -v npm >/dev/null 2>&1 || { echo "install-pi.sh: npm is not installed" >&2; exit 3; }
if ready; then print; exit 0; fi

mkdir -p "$T"
exec 9>"$T/.install.lock"
if command -v flock >/dev/null 2>&1; then flock -w 900 9; fi
if ready; then print; exit 0; fi

args=(--no-audit --no-fund --loglevel=error)
if [ ! -x "$NODE" ] || [ "$(version_of "$T/node24/node_modules/node/package.json")" != "$NODE_VERSION" ]; then
	echo "install-pi.sh: installing node@$NODE_VERSION into $T/node24" >&2
	mkdir -p "$T/node24"
	(cd "$T/node24" && { [ -f package.json ] || npm init -y >/dev/null; } && npm install "${args[@]}" "node@$NODE_VERSION" >&2)
fi
if [ ! -f "$CLI" ] || [ "$(version_of "$T/pi/node_modules/$PI_PKG/package.json")" != "$PI_VERSION" ]; then
	echo "install-pi.sh: installing $PI_PKG@$PI_VERSION into $T/pi" >&2
	mkdir -p "$T/pi"
	(cd "$T/pi" && { [ -f package.json ] || npm init -y >/dev/null; } &&
		PATH="$(dirname "$NODE"):$PATH" npm install "${args[@]}" "$PI_PKG@$PI_VERSION" >&2)
fi
ready || { echo "install-pi.sh: installed, but node $NODE_VERSION / pi $PI_VERSION are not where expected under $T" >&2; exit 4; }
print
