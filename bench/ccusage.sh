#!/usr/bin/env bash
# ccusage.sh - reading speed against ccusage on the same Claude Code files
# (issue 35: "at most 1.5x ccusage's time on the same files, all files read").
#
# Lays out SIZE (default 1GB) of Claude Code sessions under a temporary
# CLAUDE_CONFIG_DIR with bench/ccfiles (the wild fixtures replicated with
# fresh ids), then, RUNS rounds (default 3) alternating the readers, times
#   ccusage claude daily --json --offline     (its native binary)
#   ccusage claude session --json --offline
#   ctxtool estimate --json DIR/projects      (every file, default tokenizer)
# and prints the median wall and CPU (user+sys) seconds, peak RSS, and
# ctxtool's ratio to each ccusage report. The machine's load average is
# printed before and after: the figures mean little on a busy machine.
# The files are deleted at the end unless KEEP=1.
#
# ccusage is installed once with npm under ${CTXTOOL_AGENTS:-~/.cache/ctxtool-agents}/ccusage
# (the Node 24 of internal/agentkit/install-pi.sh is used when present).
# ccusage 20.0.24 is pinned: it is the newest release whose native
# linux-x64 package is published (20.0.26's is not, and its JS wrapper
# then has nothing to run).
#
#   usage: bench/ccusage.sh [SIZE] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
SIZE=${1:-1GB}
RUNS=${2:-3}
CCUSAGE_VERSION=20.0.24
SRC=${SRC:-../shared/fixtures/wild/claude-code}
T=${CTXTOOL_AGENTS:-$HOME/.cache/ctxtool-agents}

[ -d "$SRC" ] || { echo "ccusage.sh: no Claude Code sessions in $SRC (set SRC)" >&2; exit 2; }
CC="$T/ccusage/node_modules/@ccusage/ccusage-linux-x64/bin/ccusage"
if [ ! -f "$CC" ]; then
	command -v npm >/dev/null || { echo "ccusage.sh: npm is needed to install ccusage" >&2; exit 3; }
	node24="$T/node24/node_modules/node/bin"
	[ -x "$node24/node" ] && PATH="$node24:$PATH"
	mkdir -p "$T/ccusage"
	(cd "$T/ccusage" && { [ -f package.json ] || npm init -y >/dev/null; } &&
		npm install --no-audit --no-fund --loglevel=error "ccusage@$CCUSAGE_VERSION" >&2)
fi
chmod +x "$CC"

work=$(mktemp -d)
[ "${KEEP:-}" = 1 ] || trap 'rm -rf "$work"' EXIT
go build -o "$work/ctxtool" .
go run ./bench/ccfiles -src "$SRC" -size "$SIZE" -o "$work/claude"
mkdir -p "$work/home"
sync

load() { cut -d' ' -f1-3 /proc/loadavg; }
echo "cores: $(nproc); load average before: $(load)"

# timed NAME CMD...: one run, its wall, CPU and peak RSS appended to the
# NAME entries; stdout to $work/NAME.out (the last run's).
declare -A wall cpu rss
timed() {
	local name=$1 out w u s m
	shift
	out=$( { HOME="$work/home" CLAUDE_CONFIG_DIR="$work/claude" NO_COLOR=1 \
		/usr/bin/time -f '%e %U %S %M' "$@" >"$work/$name.out"; } 2>&1 | tail -1)
	read -r w u s m <<<"$out"
	wall[$name]+="$w "
	cpu[$name]+="$(awk "BEGIN {printf \"%.2f\", $u + $s}") "
	rss[$name]+="$((m / 1024)) "
}

names=(ccusage-daily ccusage-session ctxtool-estimate)
for ((r = 0; r < RUNS; r++)); do
	timed ccusage-daily "$CC" claude daily --json --offline
	timed ccusage-session "$CC" claude session --json --offline
	timed ctxtool-estimate "$work/ctxtool" estimate --json "$work/claude/projects"
done
echo "load average after: $(load)"

files=$(find "$work/claude/projects" -name '*.jsonl' | wc -l)
bytes=$(du -sb "$work/claude/projects" | cut -f1)
# What each read: ccusage's sessions and ctxtool's measured files.
sessions=$(grep -o '"sessionId"' "$work/ccusage-session.out" | wc -l || true)
measured=$(grep -c '"file"' "$work/ctxtool-estimate.out" || true)
echo "$files files, $((bytes / 1000000)) MB; ccusage session rows: $sessions; ctxtool files measured: $measured"

median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
printf '%-18s %8s %8s %8s\n' READER "WALL s" "CPU s" "PEAK MB"
for n in "${names[@]}"; do
	printf '%-18s %8s %8s %8s\n' "$n" "$(median <<<"${wall[$n]}")" "$(median <<<"${cpu[$n]}")" "$(median <<<"${rss[$n]}")"
done
cw=$(median <<<"${wall[ctxtool-estimate]}")
cc=$(median <<<"${cpu[ctxtool-estimate]}")
for n in ccusage-daily ccusage-session; do
	printf 'ctxtool / %-16s wall %s  CPU %s  (goal: at most 1.5)\n' "$n" \
		"$(awk "BEGIN {printf \"%.2f\", $cw / $(median <<<"${wall[$n]}")}")" \
		"$(awk "BEGIN {printf \"%.2f\", $cc / $(median <<<"${cpu[$n]}")}")"
done
