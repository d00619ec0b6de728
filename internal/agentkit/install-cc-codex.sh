#!/usr/bin/env bash
# install-cc-codex.sh - install the real Claude Code and Codex CLIs, pinned, once.
#
# Installs @anthropic-ai/claude-code@$CLAUDE_VERSION and @openai/codex@$CODEX_VERSION, the
# versions pinned in pins.env beside this script (each ships a
# native binary through an optional dependency; no Node 24 needed) under
# ${CTXTOOL_AGENTS:-$HOME/.cache/ctxtool-agents}: claude/ and codex/. Later runs only
# check the versions. Safe from several processes at once (flock). Prints the two
# launcher paths (claude, codex) on stdout, one per line. Exit 0 = ready; 3 = npm
# missing; 4 = installed but the versions are wrong. Used by .ci/run and by the
# tests in internal/agentkit (which skip when this has not run, unless CI=true).
set -euo pipefail
. "$(dirname "$0")/pins.env"
T=${CTXTOOL_AGENTS:-$HOME/.cache/ctxtool-agents}
CLAUDE="$T/claude/node_modules/.bin/claude"
CODEX="$T/codex/node_modules/.bin/codex"

version_of() { # package.json path -> version
	node -e 'try{process.stdout.write(require(process.argv[1]).version)}catch(e){}' "$1" 2>/dev/null
}
ready() {
	[ -x "$CLAUDE" ] && [ -x "$CODEX" ] &&
		[ "$(version_of "$T/claude/node_modules/@anthropic-ai/claude-code/package.json")" = "$CLAUDE_VERSION" ] &&
		[ "$(version_of "$T/codex/node_modules/@openai/codex/package.json")" = "$CODEX_VERSION" ]
}
print() { echo "$CLAUDE"; echo "$CODEX"; }

command -v node >/dev/null 2>&1 || { echo "install-cc-codex.sh: node is not installed" >&2; exit 3; }
command -v npm >/dev/null 2>&1 || { echo "install-cc-codex.sh: npm is not installed" >&2; exit 3; }
if ready; then print; exit 0; fi

mkdir -p "$T"
exec 9>"$T/.install.lock"
if command -v flock >/dev/null 2>&1; then flock -w 900 9; fi
if ready; then print; exit 0; fi

args=(--no-audit --no-fund --loglevel=error)
install_one() { # dir package version
	echo "install-cc-codex.sh: installing $2@$3 into $T/$1" >&2
	mkdir -p "$T/$1"
	(cd "$T/$1" && { [ -f package.json ] || npm init -y >/dev/null; } && npm install "${args[@]}" "$2@$3" >&2)
}
if [ "$(version_of "$T/claude/node_modules/@anthropic-ai/claude-code/package.json")" != "$CLAUDE_VERSION" ] || [ ! -x "$CLAUDE" ]; then
	install_one claude @anthropic-ai/claude-code "$CLAUDE_VERSION"
fi
if [ "$(version_of "$T/codex/node_modules/@openai/codex/package.json")" != "$CODEX_VERSION" ] || [ ! -x "$CODEX" ]; then
	install_one codex @openai/codex "$CODEX_VERSION"
fi
ready || { echo "install-cc-codex.sh: installed, but claude $CLAUDE_VERSION / codex $CODEX_VERSION are not where expected under $T" >&2; exit 4; }
print
