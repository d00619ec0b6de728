package checkpoint

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ctxtool/ctxtool/pkg/estimate"
	"github.com/ctxtool/ctxtool/pkg/formats"
	"github.com/ctxtool/ctxtool/pkg/sessionstore"
	"github.com/ctxtool/ctxtool/pkg/sessionwrite"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// AutoThreshold is the utilization at which an auto-80pct checkpoint is
// written (docs/design/checkpoints.md).
const AutoThreshold = 0.80

// TakeOptions configures Take (the checkpoint command).
type TakeOptions struct {
	File            string
	SessionKey      string // "" = KeyFromFile
	Trigger         string // "" = manual
	Force           bool   // ignore the dedupe and the 80% gate
	Store           *Store
	DedupeThreshold float64 // ≤ 0: DefaultDedupeThreshold
	// Size is how the context is measured and its window resolved: the
	// options every command shares (estimate.Measure), so the gauge and
	// the 80% gate agree with estimate, compact and roll.
	Size estimate.Options
	// DryRun writes nothing: no capture, no checkpoint, no state reset.
	DryRun bool
	Now    func() time.Time
	Count  func(string) int // token counter for the restore text
	// Wait is how long to wait for another capture's state lock
	// (≤ 0: DefaultStateLockWait).
	Wait time.Duration
}

// TakeResult is the outcome; its JSON is the command's output line.
type TakeResult struct {
	File            string   `json:"file"`
	Written         bool     `json:"written"`
	Reason          string   `json:"reason,omitempty"`
	CheckpointID    string   `json:"checkpointId,omitempty"`
	Path            string   `json:"path,omitempty"`
	Utilization     float64  `json:"utilization"`
	ResumeTokens    int      `json:"resumeTokens"`
	SessionKey      string   `json:"sessionKey"`
	Trigger         string   `json:"trigger"`
	InputTokens     int      `json:"inputTokens"`
	ContextWindow   int      `json:"contextWindow"`
	WindowSource    string   `json:"windowSource,omitempty"`
	CompactionCount int      `json:"compactionCount"`
	Previous        string   `json:"previousCheckpoint,omitempty"`
	Pruned          []string `json:"pruned,omitempty"`
	Gauge           string   `json:"gauge,omitempty"`
	// Method is the estimate method of InputTokens; UsageRejected the
	// usage record pi would anchor on when it is not trusted.
	Method        string              `json:"method,omitempty"`
	UsageRejected *estimate.Rejection `json:"usageRejected,omitempty"`
	DryRun        bool                `json:"dryRun,omitempty"`
	Warnings      []string            `json:"warnings,omitempty"`
	// MalformedLines are the session's lines pi drops.
	MalformedLines []transcript.Malformed `json:"malformedLines,omitempty"`
}

// triggers are the triggers the command accepts.
var triggers = []string{TriggerAuto80, TriggerCompaction, TriggerSessionEnd, TriggerManual}

// Triggers returns a copy of the triggers the command accepts.
func Triggers() []string { return slices.Clone(triggers) }

// ValidTrigger reports whether t is a trigger the command accepts.
func ValidTrigger(t string) bool { return slices.Contains(triggers, t) }

// Take builds a checkpoint of a session and stores it unless the 80% gate
// (auto-80pct) or the dedupe rule says not to. It first captures the lines
// appended since the last capture (Capture) into the state files, which
// are bundled and reset only when a checkpoint is written.
func Take(o TakeOptions) (*TakeResult, error) {
	if err := o.setDefaults(); err != nil {
		return nil, err
	}
	// OpenClaw's sessions.json beside the file names its key and counts its
	// compactions; stdin has no directory (not the working directory's).
	var sessions *sessionstore.Store
	if o.File != "-" {
		sessions = readStore(filepath.Dir(o.File))
	}
	s, key, err := loadSession(o, sessions)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	ctx := s.Context()
	in, b, err := newBranch(s, ctx)
	if err != nil {
		return nil, err
	}
	// Capture first, under the state lock held until the reset, so
	// the lines since the last capture reach this checkpoint's state and a
	// concurrent capture cannot slip in between the bundle and the reset.
	// Stdin has no position to remember: its state is bundled as found.
	var captured *CaptureResult
	if o.File != "-" && !o.DryRun {
		lock, err := o.Store.lockState(key, o.Wait)
		if err != nil {
			return nil, err
		}
		defer lock.Release()
		if captured, err = captureSession(o.Store, s, key, o.Now(), b); err != nil {
			return nil, err
		}
	}
	if err := b.rest(); err != nil {
		return nil, err
	}
	size, err := estimate.Measure(s, ctx, o.Size)
	if err != nil {
		return nil, fmt.Errorf("%s: measure context: %w", o.File, err)
	}
	if e, ok := sessions.Entry(key); ok && e.CompactionCount > in.CompactionCount {
		in.CompactionCount = e.CompactionCount
	}
	in.SessionKey, in.Trigger, in.Now = key, o.Trigger, o.Now()
	in.InputTokens, in.ContextWindow = size.Tokens, size.Window.Tokens
	res := newTakeResult(o, s, in, size, captured)
	state, warns := o.Store.ReadState(key)
	res.Warnings = append(res.Warnings, warns...)
	in.State = state
	cp := b.fold.checkpoint(in)

	if reason, previous := o.skipReason(key, size.Utilization, size.Tokens); reason != "" {
		res.Reason, res.Previous = reason, previous
		res.Gauge = Gauge(res.InputTokens, res.ContextWindow, false)
		res.ResumeTokens = restoreTokens(o.Count, cp)
		return res, nil
	}
	return o.write(key, cp, res)
}

// setDefaults fills the options left empty and checks the trigger.
func (o *TakeOptions) setDefaults() error {
	if o.Trigger == "" {
		o.Trigger = TriggerManual
	}
	if !ValidTrigger(o.Trigger) {
		return fmt.Errorf("unknown trigger %q (use auto-80pct, compaction, session-end or manual)", o.Trigger)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.DedupeThreshold <= 0 {
		o.DedupeThreshold = DefaultDedupeThreshold
	}
	return nil
}

// loadSession loads o.File and names its session key; the caller closes
// the session.
func loadSession(o TakeOptions, sessions *sessionstore.Store) (*transcript.Session, string, error) {
	key := o.SessionKey
	if key == "" && o.File == "-" {
		return nil, "", fmt.Errorf("reading the session from stdin: name its key with --session-key")
	}
	s, err := transcript.Load(o.File)
	if err != nil {
		return nil, "", err
	}
	if key == "" {
		// The header as KeyFromFile reads it (restore finds the key the
		// same way): pi's header id; other formats fall back to the path.
		key = keyFromFile(o.File, sessions, headerID(o.File))
	}
	return s, key, nil
}

// newTakeResult is the result of measuring the session, before the
// checkpoint is written or skipped.
func newTakeResult(o TakeOptions, s *transcript.Session, in Input, size *estimate.Result, captured *CaptureResult) *TakeResult {
	res := &TakeResult{File: o.File, SessionKey: in.SessionKey, Trigger: o.Trigger, InputTokens: in.InputTokens,
		ContextWindow: in.ContextWindow, WindowSource: size.Window.SourceText(), CompactionCount: in.CompactionCount, DryRun: o.DryRun, Method: size.Method,
		UsageRejected: size.Rejected, MalformedLines: s.Malformed}
	res.Utilization = math.Round(size.Utilization*10000) / 10000
	res.Warnings = append(append(res.Warnings, s.Notes()...), size.Notes...)
	if in.CompactionCount > 3 {
		res.Warnings = append(res.Warnings, fmt.Sprintf("%s has been compacted %d times: repeated compaction loses detail (consider a fresh session resumed from this checkpoint)", o.File, in.CompactionCount))
	}

	if captured != nil {
		res.Warnings = append(res.Warnings, captured.Warnings...)
	}
	return res
}

// skipReason says why no checkpoint is written (the 80% gate, the dedupe
// rule, a dry run) and names the checkpoint a duplicate would repeat; ""
// when one is written.
func (o TakeOptions) skipReason(key string, util float64, tokens int) (reason, previous string) {
	if !o.Force && o.Trigger == TriggerAuto80 && util < AutoThreshold {
		return fmt.Sprintf("utilization %.1f%% is below the %.0f%% threshold of --trigger auto-80pct", util*100, AutoThreshold*100), ""
	}
	if !o.Force {
		if last, _, err := o.Store.Latest(key); err == nil {
			if dup, delta := Dedupe(last, tokens, o.DedupeThreshold); dup {
				return fmt.Sprintf("input tokens changed by %.1f%% since %s (less than %.0f%%; --force writes anyway)", delta*100, last.Meta.CheckpointID, o.DedupeThreshold*100), last.Meta.CheckpointID
			}
		}
	}
	if o.DryRun {
		return "dry run: a checkpoint would be written (the lines since the last capture were not captured)", ""
	}
	return "", ""
}

// write stores cp and resets the state files it bundled.
func (o TakeOptions) write(key string, cp *Checkpoint, res *TakeResult) (*TakeResult, error) {
	wr, err := o.Store.Write(key, cp)
	if err != nil {
		return nil, err
	}
	res.Written, res.CheckpointID, res.Path, res.Pruned = true, wr.ID, wr.Path, wr.Pruned
	res.Previous = cp.Meta.PreviousCheckpoint
	res.Gauge = Gauge(res.InputTokens, res.ContextWindow, true)
	res.ResumeTokens = restoreTokens(o.Count, cp)
	if err := o.Store.ResetState(key); err != nil {
		res.Warnings = append(res.Warnings, fmt.Sprintf("checkpoint written but the state files were not reset: %v", err))
	}
	return res, nil
}

// restoreTokens is res.ResumeTokens, the size of the restore text, rendered once
// per outcome: a written checkpoint's text names its id, known only after
// Write.
func restoreTokens(c func(string) int, cp *Checkpoint) int {
	return count(c, Render(cp, RenderOptions{Count: c}))
}

func count(c func(string) int, s string) int {
	if c == nil {
		return DefaultCount(s)
	}
	return c(s)
}

// Target is what restore was pointed at: a session file or a bare key.
type Target struct {
	Key  string
	File string // "" when given a key
}

// ResolveTarget decides whether arg names a session file or a session
// key. An existing regular file is a file; keyFlag overrides the key
// derived from it. An argument that looks like a path (it ends in .jsonl
// or starts with /, ./, ../ or ~; keys such as "agent:main:main" and
// "telegram:user123" never do) but does not exist is an error wrapping
// fs.ErrNotExist: a mistyped path must not be read as a key. Anything
// else is a key.
func ResolveTarget(arg, keyFlag string) (Target, error) {
	fi, err := os.Stat(arg)
	if db, _, ok := formats.SplitStorePath(arg); ok {
		fi, err = os.Stat(db) // a session of an OpenClaw store: a file too
	}
	if err == nil && fi.Mode().IsRegular() {
		k := keyFlag
		if k == "" {
			k = KeyFromFile(arg)
		}
		return Target{Key: k, File: arg}, nil
	}
	if errors.Is(err, fs.ErrNotExist) && looksLikePath(arg) {
		if _, _, store := formats.SplitStorePath(arg); !store {
			return Target{}, err
		}
	}
	if keyFlag != "" {
		return Target{Key: keyFlag}, nil
	}
	return Target{Key: arg}, nil
}

func looksLikePath(arg string) bool {
	return strings.HasSuffix(arg, ".jsonl") || strings.HasPrefix(arg, "/") || strings.HasPrefix(arg, "./") ||
		strings.HasPrefix(arg, "../") || strings.HasPrefix(arg, "~")
}

// Select loads the checkpoint restore shows: id, or the latest readable one.
func (s *Store) Select(key, id string) (*Checkpoint, []string, error) {
	if id != "" {
		cp, err := s.Load(key, id)
		return cp, nil, err
	}
	return s.Latest(key)
}

// AppendResult describes the custom_message restore --append wrote.
type AppendResult struct {
	EntryID string
	Line    int
	// AlreadyLast: nothing was appended, the session's last entry is this
	// checkpoint's resume text already (Line and EntryID name it).
	AlreadyLast bool
	// Malformed are the session's lines pi drops.
	Malformed []transcript.Malformed
}

// ForeignCheckpointError is restore --append refusing a checkpoint taken
// from another session.
type ForeignCheckpointError struct {
	File, FileSession string
	CheckpointID      string
	CPSession, CPFile string
}

func (e *ForeignCheckpointError) Error() string {
	return fmt.Sprintf("%s: not appending %s: it was taken from another session (%s, %s), not from this one (%s); "+
		"restore --append adds a checkpoint only to the session it came from — check the FILE and --session-key, or run 'ctxtool checkpoint %s' first",
		e.File, e.CheckpointID, e.CPSession, e.CPFile, e.FileSession, e.File)
}

// checkSameSession refuses cp when it was taken from another session than
// s: the header ids differ (or, for checkpoints without one, the recorded
// absolute paths). An OpenClaw session key stays with a conversation across
// resets (new file, new id), so a checkpoint under the key sessions.json
// gives FILE belongs to it.
func checkSameSession(cp *Checkpoint, s *transcript.Session, file string) error {
	if k := openclawKey(file); k != "" && k == cp.Meta.SessionKey {
		return nil
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		abs = file
	}
	foreign := &ForeignCheckpointError{File: file, FileSession: "session " + s.Header.ID, CheckpointID: cp.Meta.CheckpointID,
		CPSession: "session " + cp.Meta.SessionID, CPFile: cp.Meta.SessionFile}
	switch {
	case cp.Meta.SessionID != "" && s.Header.ID != "":
		if cp.Meta.SessionID != s.Header.ID {
			return foreign
		}
	case filepath.IsAbs(cp.Meta.SessionFile):
		if cp.Meta.SessionFile != abs {
			foreign.CPSession, foreign.FileSession = "key "+cp.Meta.SessionKey, abs
			return foreign
		}
	}
	return nil
}

// alreadyLast reports whether the session's last entry is the resume text
// of this checkpoint (a second restore --append must not repeat it).
func alreadyLast(s *transcript.Session, cp *Checkpoint, text string) (*transcript.Entry, bool) {
	if len(s.Entries) == 0 {
		return nil, false
	}
	e := s.Entries[len(s.Entries)-1]
	if e.Type() != "custom_message" || e.CustomType() != CustomType {
		return nil, false
	}
	raw, err := s.Raw(e)
	if err != nil {
		return nil, false
	}
	var m struct {
		Content any `json:"content"`
		Details struct {
			CheckpointID string `json:"checkpointId"`
		} `json:"details"`
	}
	if json.Unmarshal(raw, &m) != nil {
		return nil, false
	}
	return e, m.Details.CheckpointID == cp.Meta.CheckpointID && m.Content == text
}

// AppendResume appends text to the session as a custom_message entry
// (customType ctxtool.checkpoint, displayed), under OpenClaw's session
// lock, in the file's own format version. pi sends it to the model as a
// user message on the next turn.
func AppendResume(ctx context.Context, file string, cp *Checkpoint, text string, wait time.Duration, now func() time.Time) (*AppendResult, error) {
	var res AppendResult
	details := map[string]any{
		"checkpointId": cp.Meta.CheckpointID,
		"sessionKey":   cp.Meta.SessionKey,
		"createdAt":    cp.Meta.CreatedAt,
	}
	err := sessionwrite.Update(ctx, file, sessionwrite.UpdateOptions{Wait: wait}, func(s *transcript.Session) ([][]byte, error) {
		res.Malformed = s.Malformed
		if err := checkSameSession(cp, s, file); err != nil {
			return nil, err
		}
		if e, dup := alreadyLast(s, cp, text); dup {
			res = AppendResult{EntryID: e.ID(), Line: e.Line, AlreadyLast: true, Malformed: s.Malformed}
			return nil, nil
		}
		w := sessionwrite.NewWriter(s)
		if now != nil {
			w.Now = now
		}
		a, err := w.CustomMessage(CustomType, text, true, details)
		if err != nil {
			return nil, err
		}
		res = AppendResult{EntryID: a.ID, Line: s.Lines + 1, Malformed: s.Malformed}
		return [][]byte{a.Line}, nil
	})
	if err != nil {
		return nil, err
	}
	return &res, nil
}
