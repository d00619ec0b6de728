#!/usr/bin/env bash
# install-openclaw.sh - install the real OpenClaw and the Node it needs, pinned, once.
#
# Installs Node 24 (npm package node@$NODE_VERSION) and openclaw@$OPENCLAW_VERSION, the
# versions pinned in pins.env beside this script, under
# ${OPENCLAW_TOOLS:-$HOME/.cache/ctxtool-openclaw}: node24/ and oc/ (the layout
# ../shared/tools/openclaw-store/gen-store.sh uses, which then finds them installed).
# Later runs only check the versions. Safe from several processes at once (flock).
# Prints the two paths (node binary, openclaw.mjs) on stdout, one per line. Exit 0 =
# ready; 3 = node/npm missing; 4 = installed but the versions are wrong. Used by
# .ci/run and by the tests in internal/agentkit (which skip when this has not run,
# unless CI=true).
set -euo pipefail
. "$(dirname "$0")/pins.env"
T=${OPENCLAW_TOOLS:-$HOME/.cache/ctxtool-openclaw}
NODE="$T/node24/node_modules/.bin/node"
ENTRY="$T/oc/node_modules/openclaw/openclaw.mjs"

version_of() { # package.json path -> version (any node will do)
	node -e 'try{process.stdout.write(require(process.argv[1]).version)}catch(e){}' "$1" 2>/dev/null
}
ready() {
	[ -x "$NODE" ] && [ -f "$ENTRY" ] &&
		[ "$(version_of "$T/node24/node_modules/node/package.json")" = "$NODE_VERSION" ] &&
		[ "$(version_of "$T/oc/node_modules/openclaw/package.json")" = "$OPENCLAW_VERSION" ]
}
print() { echo "$NODE"; echo "$ENTRY"; }

command -v node >/dev/null 2>&1 || { echo "install-openclaw.sh: node is not installed (any version; it bootstraps node@$NODE_VERSION)" >&2; exit 3; }
command -v npm >/dev/null 2>&1 || { echo "install-openclaw.sh: npm is not installed" >&2; exit 3; }
if ready; then print; exit 0; fi

mkdir -p "$T"
exec 9>"$T/.install.lock"
if command -v flock >/dev/null 2>&1; then flock -w 900 9; fi
if ready; then print; exit 0; fi

args=(--no-audit --no-fund --loglevel=error)
if [ ! -x "$NODE" ] || [ "$(version_of "$T/node24/node_modules/node/package.json")" != "$NODE_VERSION" ]; then
	echo "install-openclaw.sh: installing node@$NODE_VERSION into $T/node24" >&2
	mkdir -p "$T/node24"
	(cd "$T/node24" && { [ -f package.json ] || npm init -y >/dev/null; } && npm install "${args[@]}" "node@$NODE_VERSION" >&2)
fi
if [ ! -f "$ENTRY" ] || [ "$(version_of "$T/oc/node_modules/openclaw/package.json")" != "$OPENCLAW_VERSION" ]; then
	echo "install-openclaw.sh: installing openclaw@$OPENCLAW_VERSION into $T/oc" >&2
	mkdir -p "$T/oc"
	(cd "$T/oc" && { [ -f package.json ] || npm init -y >/dev/null; } &&
		PATH="$(dirname "$NODE"):$PATH" npm install "${args[@]}" "openclaw@$OPENCLAW_VERSION" >&2)
fi
ready || { echo "install-openclaw.sh: installed, but node $NODE_VERSION / openclaw $OPENCLAW_VERSION are not where expected under $T" >&2; exit 4; }
print
