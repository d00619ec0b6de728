package checkpoint

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/ctxtool/ctxtool/pkg/secrets"
)

// State is the incremental capture (docs/design/checkpoints.md): what an extension (or any
// tool) records between checkpoints, one JSON file per part under
// <state>/context/state/<sanitized key>/. The next checkpoint bundles it and
// resets the files to empty values.
type State struct {
	Decisions []StateDecision `json:"decisions"`
	Thread    ThreadState     `json:"thread"`
	Resources Resources       `json:"resources"`
	OpenItems []string        `json:"open_items"`
	Learnings []string        `json:"learnings"`
}

// StateDecision is a decision recorded as it happened.
type StateDecision struct {
	What string `json:"what"`
	When string `json:"when"` // RFC 3339
}

// ThreadState is the running conversation state (thread.json).
type ThreadState struct {
	Topic  string      `json:"topic"`
	Errors []ToolError `json:"errors"`
}

// ToolError is a failed tool call recorded by the tool_result capture.
type ToolError struct {
	Tool  string `json:"tool"`
	Error string `json:"error"`
	When  string `json:"when"`
}

// stateFiles maps each file to the part of State it holds.
var stateFiles = []struct {
	name string
	part func(*State) any
	zero func(*State)
}{
	{"decisions.json", func(s *State) any { return &s.Decisions }, func(s *State) { s.Decisions = []StateDecision{} }},
	{"thread.json", func(s *State) any { return &s.Thread }, func(s *State) { s.Thread = ThreadState{Errors: []ToolError{}} }},
	{"resources.json", func(s *State) any { return &s.Resources }, func(s *State) {
		s.Resources = Resources{FilesRead: []string{}, FilesModified: []string{}, ToolsUsed: []string{}}
	}},
	{"open_items.json", func(s *State) any { return &s.OpenItems }, func(s *State) { s.OpenItems = []string{} }},
	{"learnings.json", func(s *State) any { return &s.Learnings }, func(s *State) { s.Learnings = []string{} }},
}

// ReadState loads the session's state files. A file older than the latest
// checkpoint's pointer (_latest.json) is stale — left from before that
// checkpoint, e.g. a crash before the reset — and is skipped with a
// warning (state files stale from a previous session). A file that does
// not parse is skipped with a warning too; missing files are empty.
func (s *Store) ReadState(key string) (*State, []string) {
	st := &State{}
	var warnings []string
	dir := s.StateFilesDir(key)
	latest := modTime(filepath.Join(s.Dir(key), latestFile))
	for _, f := range stateFiles {
		path := filepath.Join(dir, f.name)
		fi, err := os.Stat(path)
		if err != nil {
			continue
		}
		if !latest.IsZero() && fi.ModTime().Before(latest) {
			warnings = append(warnings, fmt.Sprintf("discarding stale state file %s (older than the latest checkpoint)", path))
			continue
		}
		data, err := os.ReadFile(path)
		if err == nil {
			err = json.Unmarshal(data, f.part(st))
		}
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("ignoring state file %s: %v (delete it; the next checkpoint recreates it)", path, err))
			f.zero(st)
		}
	}
	st.clamp()
	return st, warnings
}

// clamp applies the caps so state files cannot grow the checkpoint
// without bound.
func (st *State) clamp() {
	if len(st.Decisions) > MaxDecisions {
		st.Decisions = st.Decisions[len(st.Decisions)-MaxDecisions:]
	}
	r := &st.Resources
	r.FilesRead = lastN(r.FilesRead, MaxFiles)
	r.FilesModified = lastN(r.FilesModified, MaxFiles)
	r.ToolsUsed = lastN(r.ToolsUsed, MaxTools)
	st.OpenItems = lastN(st.OpenItems, MaxOpenItems)
	st.Learnings = lastN(st.Learnings, MaxLearnings)
	st.Thread.Errors = lastN(st.Thread.Errors, MaxLearnings)
}

func lastN[T any](s []T, n int) []T {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// UpdateState applies fn to the session's state and writes every file back
// atomically. It is the write side of the incremental capture.
func (s *Store) UpdateState(key string, fn func(*State) error) error {
	dir := s.StateFilesDir(key)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create state directory: %w (check --state-dir)", err)
	}
	st, _ := s.ReadState(key)
	if err := fn(st); err != nil {
		return err
	}
	st.clamp()
	return s.writeState(key, st)
}

// ResetState truncates the state files to empty values (after a checkpoint
// bundled them).
func (s *Store) ResetState(key string) error {
	dir := s.StateFilesDir(key)
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	st := &State{}
	for _, f := range stateFiles {
		f.zero(st)
	}
	return s.writeState(key, st)
}

func (s *Store) writeState(key string, st *State) error {
	dir := s.StateFilesDir(key)
	if !s.KeepSecrets {
		secrets.RedactFields(st)
	}
	for _, f := range stateFiles {
		data, err := json.MarshalIndent(f.part(st), "", "  ")
		if err != nil {
			return err
		}
		if err := writeAtomic(filepath.Join(dir, f.name), append(data, '\n')); err != nil {
			return fmt.Errorf("write state %s: %w", filepath.Join(dir, f.name), err)
		}
	}
	return nil
}

// RecordToolResult is the tool_result capture (layer A): the tool
// name, the file paths in its arguments and, on failure, the error.
func (st *State) RecordToolResult(name string, args json.RawMessage, isError bool, errText string, when time.Time) {
	st.recordCall(name, &ToolCall{Args: args}, isError, errText, when)
}

// recordCall is RecordToolResult of a result of call (its arguments read
// once for the fold and the capture), named name.
func (st *State) recordCall(name string, call *ToolCall, isError bool, errText string, when time.Time) {
	st.Resources.ToolsUsed = appendUnique(st.Resources.ToolsUsed, name)
	if isError {
		st.Thread.Errors = append(st.Thread.Errors, ToolError{Tool: name, Error: gist(errText, GistChars), When: when.UTC().Format(time.RFC3339)})
		return
	}
	c := call.facts().of(name)
	to := &st.Resources.FilesRead
	if c.modify {
		to = &st.Resources.FilesModified
	}
	for _, p := range c.paths {
		*to = appendUnique(*to, p)
	}
	for _, p := range c.writes {
		st.Resources.FilesModified = appendUnique(st.Resources.FilesModified, p)
	}
}

// appendUnique adds v at the end (most recent), moving it there if s has it
// already; in place: a copy per move was most of a capture's allocation.
func appendUnique(s []string, v string) []string {
	for i, x := range s {
		if x == v {
			copy(s[i:], s[i+1:])
			s[len(s)-1] = v
			return s
		}
	}
	return append(s, v)
}
