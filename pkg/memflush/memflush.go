// Package memflush is OpenClaw's pre-compaction memory flush
// (docs/design/openclaw-compaction.md) for a command line: when a session
// nears compaction, the durable facts of the history about to be summarised
// are appended to the agent's workspace notes, memory/YYYY-MM-DD.md, once per
// compaction cycle.
//
// The rule is OpenClaw's: flush when the session's tokens reach
// contextWindow − reserveTokensFloor − softThresholdTokens, and not again
// until the next compaction (memoryFlushCompactionCount == compactionCount
// means done). The cycle is tracked in the state directory and, for a
// session listed in OpenClaw's legacy sessions.json, in its store entry as
// OpenClaw does.
//
// Offline, the notes are the decisions, constraints, open requests and
// identifiers pkg/facts detects in the region compaction would summarise;
// with a model, its answer to OpenClaw's flush prompt ("NO_REPLY" writes
// nothing). The memory file is only ever appended to, and nothing it
// already holds is written again — so a crash between the append and the
// bookkeeping, or two flushes at once, never duplicates a note.
//
// It writes only the memory file (appended to), its own state file under the
// state directory and the session's sessions.json entry; never the session
// transcript.
package memflush

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ctxtool/ctxtool/pkg/checkpoint"
	"github.com/ctxtool/ctxtool/pkg/compaction"
	"github.com/ctxtool/ctxtool/pkg/estimate"
	"github.com/ctxtool/ctxtool/pkg/filelock"
	"github.com/ctxtool/ctxtool/pkg/llm"
	"github.com/ctxtool/ctxtool/pkg/models"
	"github.com/ctxtool/ctxtool/pkg/safefile"
	"github.com/ctxtool/ctxtool/pkg/secrets"
	"github.com/ctxtool/ctxtool/pkg/sessionstore"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// OpenClaw's defaults.
const (
	DefaultSoftThresholdTokens = 4000
	// NoReply is the answer with which a model says there is nothing to
	// store.
	NoReply = "NO_REPLY"
)

// DefaultPrompt and DefaultSystemPrompt are OpenClaw's flush turn.
const (
	DefaultPrompt       = "Pre-compaction memory flush. Store durable memories now (use memory/YYYY-MM-DD.md; create memory/ if needed). If nothing to store, reply with NO_REPLY."
	DefaultSystemPrompt = "Pre-compaction memory flush turn. The session is near auto-compaction; capture durable memories to disk. You may reply, but usually NO_REPLY is correct."
)

// Threshold is where the flush triggers: window − reserve floor − soft
// threshold, never below 0.
func Threshold(window, reserveTokensFloor, softThresholdTokens int) int {
	return max(0, max(1, window)-max(0, reserveTokensFloor)-max(0, softThresholdTokens))
}

// Due is OpenClaw's shouldRunMemoryFlush: tokens > 0, a positive
// threshold reached, and no flush yet at this compaction count.
func Due(tokens, threshold, compactionCount int, lastFlushAt *int) (bool, string) {
	switch {
	case tokens <= 0:
		return false, "the session's size is unknown (0 tokens)"
	case threshold <= 0:
		return false, "the flush threshold is 0 (window ≤ reserveTokensFloor + softThresholdTokens)"
	case tokens < threshold:
		return false, fmt.Sprintf("below the flush threshold: %d of %d tokens", tokens, threshold)
	case lastFlushAt != nil && *lastFlushAt == compactionCount:
		return false, fmt.Sprintf("already flushed in this compaction cycle (compactionCount %d)", compactionCount)
	}
	return true, ""
}

// Completer is the model the flush may ask (llm.Client implements it).
type Completer interface {
	Complete(ctx context.Context, r llm.Request) (*llm.Completion, error)
}

// Options are the inputs of Run.
type Options struct {
	File      string
	Workspace string
	StateDir  string
	// SessionKey names the session in the state directory ("" = from
	// sessions.json, else the file name).
	SessionKey string
	// Size is how the session is measured and its window resolved (the
	// options every command measures with); the method is always
	// estimate.Usage, pi's usage-anchored estimate: the number OpenClaw's
	// flush gate reads from its store.
	Size                                    estimate.Options
	ReserveTokensFloor, SoftThresholdTokens int
	// ForceFlushTranscriptBytes makes a session file this large due
	// whatever its token count (OpenClaw's second trigger); ≤ 0: off.
	ForceFlushTranscriptBytes int64
	// Force skips the token threshold (compact --memory-flush: the
	// compaction happens anyway); the once-per-cycle rule still holds.
	Force bool
	// Compaction plans the region about to be compacted (compaction.Prepare,
	// in the window Size resolves).
	Compaction compaction.Settings
	// Model, when set, writes the notes (the flush prompts); nil: the
	// offline fact detector.
	Model                Completer
	Prompt, SystemPrompt string
	DryRun               bool
	// Wait is how long to wait for a concurrent flush of the same session
	// and for the memory file's and store's locks.
	Wait time.Duration
	Now  func() time.Time
}

// Result is what `ctxtool flush --json` prints for one session.
type Result struct {
	File       string `json:"file"`
	SessionKey string `json:"sessionKey"`
	// Flushed: notes were appended (or, with a NO_REPLY answer or nothing
	// new to note, the cycle was marked done with nothing written).
	Flushed bool   `json:"flushed"`
	Reason  string `json:"reason,omitempty"`
	DryRun  bool   `json:"dryRun,omitempty"`

	Tokens        int `json:"tokens"`
	Threshold     int `json:"threshold"`
	ContextWindow int `json:"contextWindow"`
	// TranscriptBytes is the session file's size; DueBySize says the
	// flush ran because it reached forceFlushTranscriptBytes while the
	// tokens were below the threshold.
	TranscriptBytes int64 `json:"transcriptBytes"`
	DueBySize       bool  `json:"dueBySize,omitempty"`
	// CompactionCount is the session's count; LastFlushCompactionCount
	// the count at the previous flush (nil: never).
	CompactionCount          int  `json:"compactionCount"`
	LastFlushCompactionCount *int `json:"lastFlushCompactionCount"`

	// Region is what compaction would summarise, where the notes come from.
	RegionMessages int `json:"regionMessages"`
	FromLine       int `json:"fromLine,omitempty"`
	ToLine         int `json:"toLine,omitempty"`
	// Source is "facts" (offline) or "llm".
	Source     string `json:"source"`
	MemoryFile string `json:"memoryFile,omitempty"`
	// Entries were written; Duplicates were already in the memory file.
	Entries    []string `json:"entries"`
	Duplicates int      `json:"duplicates"`
	NoReply    bool     `json:"noReply,omitempty"`
	// SessionsJSON is the store updated with memoryFlushCompactionCount
	// ("" when the session is in none).
	SessionsJSON string   `json:"sessionsJson,omitempty"`
	Warnings     []string `json:"warnings,omitempty"`
}

// state is the per-session record in <state-dir>/memflush/<key>.json.
type state struct {
	MemoryFlushCompactionCount *int   `json:"memoryFlushCompactionCount"`
	MemoryFlushAt              int64  `json:"memoryFlushAt,omitempty"`
	File                       string `json:"file,omitempty"`
}

// StatePath is where the flush cycle of a session key is recorded.
func StatePath(stateDir, key string) string {
	return filepath.Join(stateDir, "memflush", checkpoint.SanitizeKey(key)+".json")
}

// Run flushes one session if the rule says so.
func Run(ctx context.Context, o Options) (*Result, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	if err := checkOptions(o); err != nil {
		return nil, err
	}
	s, err := transcript.Load(o.File)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	ref, err := sessionstore.Find(o.File)
	if err != nil {
		return nil, err
	}
	key := sessionKey(o, ref)
	tokens, window := measure(s, o.Size)
	res := &Result{File: o.File, SessionKey: key, Tokens: tokens, ContextWindow: window, DryRun: o.DryRun,
		Threshold: Threshold(window, o.ReserveTokensFloor, o.SoftThresholdTokens), Entries: []string{}, Source: "facts"}
	if o.Model != nil {
		res.Source = "llm"
	}

	// One flush of a session at a time: the second waits, then sees the
	// cycle done.
	f := &flush{o: o, s: s, ref: ref, res: res, statePath: StatePath(o.StateDir, key)}
	// A dry run of a session never flushed writes nothing, not even the
	// state directory: there is no cycle to read and no flush to race.
	if _, err := os.Stat(filepath.Dir(f.statePath)); !o.DryRun || err == nil {
		if err := os.MkdirAll(filepath.Dir(f.statePath), 0o700); err != nil {
			return nil, fmt.Errorf("state directory %s: %w", filepath.Dir(f.statePath), err)
		}
		lock, err := filelock.Acquire(ctx, f.statePath, cmp.Or(o.Wait, defaultLockWait))
		if err != nil {
			return nil, err
		}
		defer lock.Release()
	}
	if err := f.readCycle(); err != nil {
		return nil, err
	}
	if !f.due(tokens) {
		return res, nil
	}
	region, err := f.region(window)
	if err != nil {
		return nil, err
	}
	if len(region) == 0 {
		return res, nil
	}
	now := o.Now()
	if err := f.writeNotes(ctx, region, now); err != nil {
		return res, err
	}
	if o.DryRun {
		return res, nil
	}
	return res, f.recordCycle(ctx, now)
}

// checkOptions refuses what Run cannot flush.
func checkOptions(o Options) error {
	if o.Workspace == "" {
		return fmt.Errorf("no workspace: pass --workspace DIR (the agent's workspace, where memory/YYYY-MM-DD.md lives)")
	}
	if o.StateDir == "" {
		return fmt.Errorf("no state directory (set --state-dir or CTXTOOL_STATE_DIR)")
	}
	if o.File == "-" {
		return fmt.Errorf("flush reads a session file, not stdin: its compaction cycle is tracked per file (and in the sessions.json beside it)")
	}
	return nil
}

// sessionKey names the session in the state directory: the given key,
// else the sessions.json one, else one from the file name.
func sessionKey(o Options, ref *sessionstore.Ref) string {
	switch {
	case o.SessionKey != "":
		return o.SessionKey
	case ref != nil:
		return ref.Key
	}
	return checkpoint.KeyFromFile(o.File)
}

// flush is one Run under the session's flush lock: the session, its
// sessions.json entry (ref, nil: none) and the result being filled.
type flush struct {
	o         Options
	s         *transcript.Session
	ref       *sessionstore.Ref
	res       *Result
	statePath string
}

// readCycle reads the compaction count and the count at the last flush,
// from the store entry when there is one, else from the session and the
// state file.
func (f *flush) readCycle() error {
	st, err := readState(f.statePath)
	if err != nil {
		return err
	}
	if f.ref != nil {
		// Re-read inside the lock: another flush may just have written it.
		if f.ref, err = sessionstore.Find(f.o.File); err != nil {
			return err
		}
	}
	res := f.res
	res.CompactionCount = compactions(f.s)
	res.LastFlushCompactionCount = st.MemoryFlushCompactionCount
	if f.ref != nil {
		res.CompactionCount = f.ref.Entry.CompactionCount
		if f.ref.Entry.MemoryFlushCompactionCount != nil {
			res.LastFlushCompactionCount = f.ref.Entry.MemoryFlushCompactionCount
		}
	}
	return nil
}

// due says whether the session (tokens) is due a flush; when not, the
// result's Reason says why.
func (f *flush) due(tokens int) bool {
	o, res := f.o, f.res
	res.TranscriptBytes = f.s.Size
	bySize := o.ForceFlushTranscriptBytes > 0 && f.s.Size >= o.ForceFlushTranscriptBytes
	if (o.Force || bySize) && tokens < res.Threshold {
		// compaction is happening regardless of size, or the file is
		// large enough that the token count is not trusted to say so
		res.DueBySize = bySize && !o.Force
		tokens = res.Threshold
	}
	if ok, why := Due(tokens, res.Threshold, res.CompactionCount, res.LastFlushCompactionCount); !ok {
		res.Reason, res.DueBySize = why, false
		return false
	}
	return true
}

// measure is the session's size and its context window.
func measure(s *transcript.Session, size estimate.Options) (tokens, window int) {
	size.Method = estimate.Usage
	r, err := estimate.Measure(s, s.Context(), size)
	if err != nil { // only an unknown method fails, and usage is known
		return 0, models.DefaultContextWindow
	}
	return r.Tokens, r.Window.Tokens
}

// region is the region about to be compacted (empty: nothing would be,
// and the result's Reason says why).
func (f *flush) region(window int) ([]*transcript.Entry, error) {
	set := f.o.Compaction
	set.Force, set.ContextWindow = true, window
	p, err := compaction.Prepare(f.s, set)
	if err != nil {
		return nil, err
	}
	region := append(append([]*transcript.Entry{}, p.Summarize...), p.TurnPrefix...)
	f.res.RegionMessages = len(region)
	if len(region) == 0 {
		f.res.Reason = "nothing would be compacted: " + strings.TrimSpace(p.Reason)
		return region, nil
	}
	f.res.FromLine, f.res.ToLine = region[0].Line, region[len(region)-1].Line
	return region, nil
}

// writeNotes takes the notes of region (the model's or the fact
// detector's) and appends the new ones to today's memory file.
func (f *flush) writeNotes(ctx context.Context, region []*transcript.Entry, now time.Time) error {
	o, res := f.o, f.res
	res.MemoryFile = filepath.Join(o.Workspace, "memory", now.Format("2006-01-02")+".md")
	var notes []note
	var err error
	if o.Model != nil {
		notes, res.NoReply, err = modelNotes(ctx, f.s, region, o, res.MemoryFile)
	} else {
		notes, err = factNotes(f.s, region)
	}
	if err != nil {
		return err
	}
	if !o.Compaction.KeepSecrets {
		// Notes are read back into every later request (bootstrap memory).
		for i := range notes {
			notes[i].text = secrets.Redact(notes[i].text)
			notes[i].fact.Value = secrets.Redact(notes[i].fact.Value)
		}
	}
	if !o.DryRun {
		if err := os.MkdirAll(filepath.Dir(res.MemoryFile), 0o755); err != nil {
			return fmt.Errorf("memory directory %s: %w (check the workspace's permissions)", filepath.Dir(res.MemoryFile), err)
		}
	}
	written, dups, err := appendNotes(ctx, res.MemoryFile, notes, heading(res.SessionKey, now), o.DryRun, o.Wait)
	if err != nil {
		return err
	}
	res.Entries, res.Duplicates = written, dups
	res.Flushed = true
	return nil
}

// recordCycle is the bookkeeping: the cycle is done, in the state file and
// (a failure there is only a warning) in the store entry.
func (f *flush) recordCycle(ctx context.Context, now time.Time) error {
	count := f.res.CompactionCount
	st := state{MemoryFlushCompactionCount: &count, MemoryFlushAt: now.UnixMilli(), File: f.o.File}
	if err := writeState(f.statePath, st); err != nil {
		return err
	}
	if f.ref != nil {
		err := sessionstore.Update(ctx, f.ref.StorePath, f.ref.Key, f.o.Wait, func(sessionstore.Entry) (*sessionstore.Patch, error) {
			return &sessionstore.Patch{Set: map[string]any{"memoryFlushCompactionCount": count, "memoryFlushAt": now.UnixMilli()}}, nil
		})
		if err != nil {
			f.res.Warnings = append(f.res.Warnings, "sessions.json not updated (the state directory records the flush): "+err.Error())
		} else {
			f.res.SessionsJSON = f.ref.StorePath
		}
	}
	return nil
}

// compactions counts the compaction entries on the session's branch: the
// compaction count of a session no store lists.
func compactions(s *transcript.Session) int {
	n := 0
	for _, e := range s.Branch() {
		if e.Type() == "compaction" {
			n++
		}
	}
	return n
}

func readState(path string) (state, error) {
	var st state
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("%s: %w", path, err)
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return st, fmt.Errorf("%s: %w (delete it to start the flush cycle afresh)", path, err)
	}
	return st, nil
}

// writeState replaces the state file atomically (temp file, fsync, rename).
func writeState(path string, st state) error {
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	if err := safefile.WriteFile(path, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("state %s: %w", path, err)
	}
	return nil
}

// heading opens one flush's block in the memory file.
func heading(key string, t time.Time) string {
	return fmt.Sprintf("## Pre-compaction memory flush — %s, %s", key, t.Format("15:04 MST"))
}
