// Command gen writes synthetic pi session files with internal/sessiongen.
//
//	go run ./bench/gen -preset sample-v3 -o testdata/sample-v3.jsonl
//	go run ./bench/gen -preset bench -size 1GB -o /tmp/big.jsonl
//	go run ./bench/gen -all -dir testdata          # every testdata preset
//	go run ./bench/gen -list
//	go run ./bench/gen -opts '{"Turns":50,"Compactions":2}' -o /tmp/s.jsonl
//	go run ./bench/gen -format codex -size 1GB -opts '{"Compactions":1807}' -o /tmp/c.jsonl
//
// It prints a one-line JSON summary per file on stderr (bytes, lines,
// context messages, heuristic and ground-truth tokens, MB/s).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	"github.com/ctxtool/ctxtool/internal/sessiongen"
)

func main() {
	preset := flag.String("preset", "", "named option set (see -list)")
	out := flag.String("o", "", "output file")
	all := flag.Bool("all", false, "write every testdata preset into -dir")
	dir := flag.String("dir", "testdata", "directory for -all")
	size := flag.String("size", "", "target size, e.g. 100MB, 1GB (sets TargetBytes)")
	seed := flag.Int64("seed", -1, "override the seed")
	opts := flag.String("opts", "", "Options as JSON, merged over the preset")
	list := flag.Bool("list", false, "list presets")
	agent := flag.String("format", "pi", "pi, claude-code, codex or codex-legacy (the last three take -size, -seed and -opts as sessiongen.AgentOptions)")
	flag.BoolVar(&verbose, "v", false, "also print the planted facts (one JSON object per line)")
	flag.Parse()
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(200) // mostly short-lived garbage: trade some memory for speed
	}
	if *agent != "pi" {
		if err := writeAgent(*agent, *out, *size, *seed, *opts); err != nil {
			fmt.Fprintln(os.Stderr, "gen:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*preset, *out, *all, *dir, *size, *seed, *opts, *list); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(preset, out string, all bool, dir, size string, seed int64, opts string, list bool) error {
	if list {
		for _, p := range sessiongen.Presets() {
			fmt.Printf("%-24s %-30s %s\n", p.Name, p.File, p.About)
		}
		return nil
	}
	if all {
		for _, p := range sessiongen.Presets() {
			if p.File == "" {
				continue
			}
			if err := write(filepath.Join(dir, p.File), p.Options); err != nil {
				return err
			}
		}
		return nil
	}
	if out == "" {
		return fmt.Errorf("need -o FILE (or -all, -list)")
	}
	var o sessiongen.Options
	if preset != "" {
		var err error
		if o, err = sessiongen.PresetOptions(preset); err != nil {
			return err
		}
	}
	sized, err := override(&o, opts, size, seed, &o.TargetBytes, &o.Seed)
	if err != nil {
		return err
	}
	if sized {
		o.NoLineIndex = true
	}
	return write(out, o)
}

// override applies -opts (JSON merged into o), then -size and -seed, the
// same way for pi and the other formats; sized reports that -size was given.
func override(o any, opts, size string, seed int64, targetBytes *int64, oseed *uint64) (sized bool, err error) {
	if opts != "" {
		if err := json.Unmarshal([]byte(opts), o); err != nil {
			return false, fmt.Errorf("-opts: %w", err)
		}
	}
	if size != "" {
		if *targetBytes, err = sessiongen.ParseSize(size); err != nil {
			return false, err
		}
	}
	if seed >= 0 {
		*oseed = uint64(seed)
	}
	return size != "", nil
}

var verbose bool

func write(path string, o sessiongen.Options) error {
	start := time.Now()
	res, err := sessiongen.GenerateFile(path, o)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	secs := time.Since(start).Seconds()
	j, _ := json.Marshal(map[string]any{
		"file": path, "bytes": res.Bytes, "lines": res.LineCount, "entries": res.Entries,
		"malformedLines": res.MalformedLines, "contextMessages": res.Context.Messages,
		"heuristicTokens": res.Context.HeuristicTokens, "usageTokens": res.Context.UsageTokens,
		"trueTokens": res.Context.TrueTokens, "facts": len(res.Facts),
		"seconds": secs, "MBps": float64(res.Bytes) / 1e6 / secs,
	})
	fmt.Fprintln(os.Stderr, string(j))
	if verbose {
		for _, f := range res.Facts {
			j, _ := json.Marshal(f)
			fmt.Fprintln(os.Stderr, string(j))
		}
	}
	return nil
}

// writeAgent writes a Claude Code or Codex transcript (sessiongen/agents.go).
func writeAgent(format, path, size string, seed int64, opts string) error {
	if path == "" {
		return fmt.Errorf("need -o FILE")
	}
	o := sessiongen.AgentOptions{Thinking: true, Compactions: 0}
	if _, err := override(&o, opts, size, seed, &o.TargetBytes, &o.Seed); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	start := time.Now()
	var res *sessiongen.AgentResult
	switch format {
	case "claude-code":
		res, err = sessiongen.GenerateClaudeCode(f, o)
	case "codex", "codex-legacy":
		o.Legacy = format == "codex-legacy"
		res, err = sessiongen.GenerateCodex(f, o)
	default:
		err = fmt.Errorf("-format %q: use pi, claude-code, codex or codex-legacy", format)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	j, _ := json.Marshal(map[string]any{"file": path, "format": format, "bytes": res.Bytes, "lines": res.Lines,
		"contextMessages": res.ContextMessages, "heuristicTokens": res.ContextTokens, "usageTokens": res.UsageTokens,
		"seconds": time.Since(start).Seconds()})
	fmt.Fprintln(os.Stderr, string(j))
	return nil
}
