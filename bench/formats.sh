#!/usr/bin/env bash
# Reading cost of each transcript format against a pi file of the same size
# (issue 14: a 1 GB Claude Code or Codex file within a pi file's bounds):
# builds ctxtool, generates with bench/gen a pi, a Claude Code and a Codex
# transcript of SIZE each (default 1GB), runs `ctxtool estimate --tokenizer
# heuristic --json` on each in its own process, RUNS rounds (default 3) that
# alternate the files, and prints the median wall time, CPU time (user+sys)
# and peak RSS, with CPU and RSS as ratios to the pi file.
#
# Two row sets:
#   same cadence  all three files with the same compactions, one per 594 kB
#                 of SIZE (bench/curve.sh's shape: 1,807 at 1 GB; Claude
#                 Code writes compact_boundary + isCompactSummary, Codex
#                 `compacted` records), so each file's active context is a
#                 real session's (Claude Code and Codex lines carry more
#                 bytes per token than pi's: their contexts are smaller at
#                 one cadence, ~40k and ~65k tokens before a compaction
#                 against pi's ~110k);
#   worst case    Claude Code and Codex without any compaction (the whole
#                 file is the context: 100k of messages, far beyond any
#                 model window), against a pi file without compaction too
#                 (pi-nc: the same generator and size as pi), so that the
#                 ratios compare like with like.
# SETS="same worst" (the default) picks them. Files are cached in DIR by
# name, so a rerun skips generating them (a link to an equal file will do).
#
#   usage: bench/formats.sh [SIZE] [DIR] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
SIZE=${1:-1GB}
DIR=${2:-$(mktemp -d)}
RUNS=${3:-3}
SETS=${SETS:-same worst}
mkdir -p "$DIR"
go build -o "$DIR/ctxtool" .

# compactions SIZE: one per 594 kB of the target size, as bench/curve.sh.
compactions() {
	local n=${1%[KMG]B} unit=${1: -2}
	case $unit in KB) n=$((n << 10)) ;; MB) n=$((n << 20)) ;; GB) n=$((n << 30)) ;; esac
	echo $((n / 594000 > 0 ? n / 594000 : 1))
}

# gen NAME FORMAT PRESET COMPACTIONS: DIR/NAME.jsonl unless it is there.
gen() {
	local f="$DIR/$1.jsonl"
	[ -s "$f" ] && return
	go run ./bench/gen -format "$2" -preset "$3" -size "$SIZE" -opts "{\"Compactions\": $4}" -o "$f.tmp" 2>/dev/null
	mv "$f.tmp" "$f"
}

n=$(compactions "$SIZE")
files=()
if [[ $SETS == *same* ]]; then
	gen pi pi bench "$n"
	gen claude-code claude-code "" "$n"
	gen codex codex "" "$n"
	files+=(pi claude-code codex)
fi
if [[ $SETS == *worst* ]]; then
	gen pi-nc pi bench 0
	gen claude-code-nc claude-code "" 0
	gen codex-nc codex "" 0
	files+=(pi-nc claude-code-nc codex-nc)
fi

# One run of each file per round, alternating, so drift hits all alike.
declare -A wall cpu rss
for ((r = 0; r < RUNS; r++)); do
	for f in "${files[@]}"; do
		out=$( { /usr/bin/time -f '%e %U %S %M' "$DIR/ctxtool" estimate --tokenizer heuristic --json "$DIR/$f.jsonl" >/dev/null; } 2>&1 | tail -1)
		read -r w u s m <<<"$out"
		wall[$f]+="$w "
		cpu[$f]+="$(awk "BEGIN {printf \"%.2f\", $u + $s}") "
		rss[$f]+="$((m / 1024)) "
	done
done

median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# row FILE BASE: FILE's medians, CPU and RSS as ratios to BASE's.
row() {
	local f=$1 w c m base_c base_m
	base_c=$(median <<<"${cpu[$2]}")
	base_m=$(median <<<"${rss[$2]}")
	w=$(median <<<"${wall[$f]}")
	c=$(median <<<"${cpu[$f]}")
	m=$(median <<<"${rss[$f]}")
	printf '%-16s %6s %8s %8s %7s %8s %7s\n' "$f" "$(($(stat -L -c %s "$DIR/$f.jsonl") / 1000000))" \
		"$w" "$c" "$(awk "BEGIN {printf \"%.2f\", $c / $base_c}")" "$m" "$(awk "BEGIN {printf \"%.2f\", $m / $base_m}")"
}

echo "estimate --tokenizer heuristic, median of $RUNS alternating runs; x pi = ratio to the set's pi row"
for set in same worst; do
	[[ $SETS == *$set* ]] || continue
	echo
	[ $set = same ] && echo "same cadence: one compaction per 594 kB ($n in $SIZE) in every file" ||
		echo "worst case: no compaction in any file"
	printf '%-16s %6s %8s %8s %7s %8s %7s\n' FILE MB "WALL s" "CPU s" "x pi" "PEAK MB" "x pi"
	if [ $set = same ]; then
		row pi pi && row claude-code pi && row codex pi
	else
		row pi-nc pi-nc && row claude-code-nc pi-nc && row codex-nc pi-nc
	fi
done
