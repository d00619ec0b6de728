# install-lib.sh - sourced by install-pi.sh, install-cc-codex.sh and
# install-openclaw.sh: the pins (pins.env, one line per agent) and the steps
# the three share. The sourcing script sets ME (its name, for messages) and
# T (its cache directory) first.
. "$(dirname "${BASH_SOURCE[0]}")/pins.env"

version_of() { # package.json path -> version (any node will do)
	node -e 'try{process.stdout.write(require(process.argv[1]).version)}catch(e){}' "$1" 2>/dev/null
}

# has DIR PACKAGE VERSION: $T/DIR/node_modules/PACKAGE is at VERSION.
has() { [ "$(version_of "$T/$1/node_modules/$2/package.json")" = "$3" ]; }

# need_npm: exit 3 when node or npm is missing.
need_npm() {
	command -v node >/dev/null 2>&1 || { echo "$ME: node is not installed (any version; it bootstraps what it needs)" >&2; exit 3; }
	command -v npm >/dev/null 2>&1 || { echo "$ME: npm is not installed" >&2; exit 3; }
}

# lock: one installer at a time under $T (flock, when there is one).
lock() {
	mkdir -p "$T"
	exec 9>"$T/.install.lock"
	if command -v flock >/dev/null 2>&1; then flock -w 900 9; fi
}

# npm_into DIR PACKAGE VERSION [NODE]: install PACKAGE@VERSION into $T/DIR
# unless it is there, with NODE's directory first on PATH when given.
npm_into() {
	has "$1" "$2" "$3" && return 0
	echo "$ME: installing $2@$3 into $T/$1" >&2
	mkdir -p "$T/$1"
	(cd "$T/$1" && { [ -f package.json ] || npm init -y >/dev/null; } &&
		PATH="${4:+$(dirname "${4:-}"):}$PATH" npm install --no-audit --no-fund --loglevel=error "$2@$3" >&2)
}
