#!/usr/bin/env bash
# install-cc-codex.sh - install the real Claude Code and Codex CLIs, pinned, once.
#
# Installs @anthropic-ai/claude-code@$CLAUDE_VERSION and @openai/codex@$CODEX_VERSION, the
# versions pinned in pins.env beside this script, read by install-lib.sh (each ships a
# native binary through an optional dependency; no Node 24 needed) under
# ${CTXTOOL_AGENTS:-$HOME/.cache/ctxtool-agents}: claude/ and codex/. Later runs only
# check the versions. Safe from several processes at once (flock). Prints the two
# launcher paths (claude, codex) on stdout, one per line. Exit 0 = ready; 3 = npm
# missing; 4 = installed but the versions are wrong. Used by .ci/run and by the
# tests in internal/agentkit (which skip when this has not run, unless CI=true).
set -euo pipefail
ME=install-cc-codex.sh
T=${CTXTOOL_AGENTS:-$HOME/.cache/ctxtool-agents}
. "$(dirname "$0")/install-lib.sh"
CLAUDE="$T/claude/node_modules/.bin/claude"
CODEX="$T/codex/node_modules/.bin/codex"

ready() {
	[ -x "$CLAUDE" ] && [ -x "$CODEX" ] &&
		has claude @anthropic-ai/claude-code "$CLAUDE_VERSION" && has codex @openai/codex "$CODEX_VERSION"
}
print() { echo "$CLAUDE"; echo "$CODEX"; }

need_npm
if ready; then print; exit 0; fi
lock
if ready; then print; exit 0; fi
npm_into claude @anthropic-ai/claude-code "$CLAUDE_VERSION"
npm_into codex @openai/codex "$CODEX_VERSION"
ready || { echo "$ME: installed, but claude $CLAUDE_VERSION / codex $CODEX_VERSION are not where expected under $T" >&2; exit 4; }
print
