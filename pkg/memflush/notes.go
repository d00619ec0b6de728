package memflush

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ctxtool/ctxtool/pkg/compaction"
	"github.com/ctxtool/ctxtool/pkg/facts"
	"github.com/ctxtool/ctxtool/pkg/filelock"
	"github.com/ctxtool/ctxtool/pkg/internal/lazyre"
	"github.com/ctxtool/ctxtool/pkg/llm"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// note is one line for the memory file and the fact it carries (what the
// duplicate check looks for).
type note struct {
	text string
	fact facts.Fact
}

// maxIdentifiers bounds the identifiers one flush notes.
const maxIdentifiers = 30

// noteLabel is how each flushed class reads in the memory file.
var noteLabel = map[facts.Class]string{
	facts.Constraint: "Constraint",
	facts.Request:    "Open",
	facts.Decision:   "Decision",
	facts.Identifier: "Identifier",
}

// factNotes are the durable facts of the region: constraints, open
// requests, decisions and identifiers, in that order — from what was said
// in the conversation only. Tool calls and their output are left out: what
// a tool read or printed is on disk already (a rule in AGENTS.md, a path
// in a listing), and scanning it would cost most of the flush's time.
func factNotes(s *transcript.Session, region []*transcript.Entry) ([]note, error) {
	all, err := facts.FromEntries(s, region)
	if err != nil {
		return nil, err
	}
	var srcs []facts.Source
	for _, src := range all {
		if facts.OriginRank(src.Role) <= facts.OriginRank("assistant") {
			srcs = append(srcs, src)
		}
	}
	by := facts.ByClass(facts.Detect(srcs))
	var out []note
	for _, c := range []facts.Class{facts.Constraint, facts.Request, facts.Decision} {
		for _, f := range by[c] {
			out = append(out, note{text: "- " + noteLabel[c] + ": " + oneLine(f.Sentence), fact: f})
		}
	}
	ids := 0
	for _, f := range by[facts.Identifier] {
		if ids >= maxIdentifiers {
			break
		}
		ids++
		text := "- Identifier: `" + f.Value + "`"
		if f.Kind != "" {
			text = "- Identifier (" + f.Kind + "): `" + f.Value + "`"
		}
		out = append(out, note{text: text, fact: f})
	}
	return out, nil
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// maxModelInputChars bounds the conversation sent with the flush prompt.
const maxModelInputChars = 100_000

// modelNotes asks the model with OpenClaw's flush turn. A model here has
// no tools to write files with, so it is told to answer with the notes
// themselves; NO_REPLY means nothing to store.
func modelNotes(ctx context.Context, s *transcript.Session, region []*transcript.Entry, o Options, memoryFile string) ([]note, bool, error) {
	tr, err := compaction.RegionTranscript(s, region, maxModelInputChars, o.Compaction.KeepSecrets)
	if err != nil {
		return nil, false, err
	}
	prompt, system := o.Prompt, o.SystemPrompt
	if prompt == "" {
		prompt = DefaultPrompt
	}
	if system == "" {
		system = DefaultSystemPrompt
	}
	rel := filepath.Join("memory", filepath.Base(memoryFile))
	user := "<conversation>\n" + tr + "\n</conversation>\n\n" + prompt + "\n\n" +
		fmt.Sprintf("You cannot call tools in this turn: answer with the notes themselves, one Markdown bullet per durable memory, and they will be appended to %s. Answer %s alone if nothing is worth storing.", rel, NoReply)
	c, err := o.Model.Complete(ctx, llm.Request{System: system, User: user, MaxTokens: 2000})
	if err != nil {
		return nil, false, fmt.Errorf("memory flush: the model failed, nothing was written: %w", err)
	}
	return parseReply(c.Text)
}

var (
	bulletPrefix = lazyre.New(`^(?:[-*•+]|\d+[.)])\s+`)
	noReplyRE    = lazyre.New(`^\W*` + NoReply + `\W*$`)
)

// parseReply turns a model's answer into notes: one per bullet or line,
// headings and blank lines dropped; NO_REPLY (alone) is no notes.
func parseReply(text string) ([]note, bool, error) {
	text = strings.TrimSpace(text)
	if noReplyRE().MatchString(text) {
		return nil, true, nil
	}
	var out []note
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") || noReplyRE().MatchString(line) {
			continue
		}
		line = oneLine(bulletPrefix().ReplaceAllString(line, ""))
		if line == "" {
			continue
		}
		out = append(out, note{text: "- " + line, fact: facts.Fact{Class: facts.Decision, Value: line}})
	}
	return out, len(out) == 0, nil
}

// defaultLockWait is how long a flush waits for the locks of its memory
// file and session state when the caller set no wait.
const defaultLockWait = 10 * time.Second

// appendNotes appends the notes the memory file does not already carry,
// under the file's lock, as one block under heading; a new file starts
// with its date as title. It returns the lines written and how many were
// duplicates. The file is never rewritten.
func appendNotes(ctx context.Context, path string, notes []note, heading string, dryRun bool, wait time.Duration) ([]string, int, error) {
	if wait <= 0 {
		wait = defaultLockWait
	}
	if !dryRun {
		lock, err := filelock.Acquire(ctx, path, wait)
		if err != nil {
			return nil, 0, err
		}
		defer lock.Release()
	}
	existing, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, 0, fmt.Errorf("memory file %s: %w", path, err)
	}
	have := facts.NewCorpus(string(existing))
	var lines []string
	dups := 0
	for _, n := range notes {
		if have.Has(n.fact) || facts.NewCorpus(lines...).Has(n.fact) {
			dups++
			continue
		}
		lines = append(lines, n.text)
	}
	if len(lines) == 0 || dryRun {
		return emptyIfNil(lines), dups, nil
	}
	var b strings.Builder
	switch {
	case len(existing) == 0:
		b.WriteString("# " + strings.TrimSuffix(filepath.Base(path), ".md") + "\n\n")
	case !strings.HasSuffix(string(existing), "\n"):
		b.WriteString("\n\n")
	default:
		b.WriteString("\n")
	}
	b.WriteString(heading + "\n\n")
	b.WriteString(strings.Join(lines, "\n") + "\n")
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, 0, fmt.Errorf("memory file %s: %w (check the workspace's permissions)", path, err)
	}
	if _, err := f.WriteString(b.String()); err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("memory file %s: append failed: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("memory file %s: fsync: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return nil, 0, err
	}
	return lines, dups, nil
}

func emptyIfNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
