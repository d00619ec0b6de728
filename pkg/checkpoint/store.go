package checkpoint

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/ctxtool/ctxtool/pkg/internal/lazyre"
	"github.com/ctxtool/ctxtool/pkg/safefile"
	"github.com/ctxtool/ctxtool/pkg/secrets"
)

// Defaults of the store (config checkpoint.keep, checkpoint.dedupeThreshold).
const (
	DefaultKeep            = 5
	DefaultDedupeThreshold = 0.05
	latestFile             = "_latest.json"
)

// ErrNoCheckpoint is returned when a session key has no checkpoint at all.
var ErrNoCheckpoint = errors.New("no checkpoint")

// Store is the on-disk layout of docs/design/checkpoints.md ("Storage")
// under a state directory:
//
//	<state>/context/checkpoints/<sanitized key>/cp_NNN.yaml  (write-once)
//	<state>/context/checkpoints/<sanitized key>/_latest.json (pointer)
//	<state>/context/state/<sanitized key>/*.json             (incremental state)
type Store struct {
	StateDir string
	// Keep is how many checkpoints survive retention (≤ 0: DefaultKeep).
	Keep int
	// KeepSecrets writes checkpoints and incremental state unredacted
	// (recall.redact: false); by default every string of them goes
	// through secrets.Redact.
	KeepSecrets bool
}

// Entry is one checkpoint file of a session.
type Entry struct {
	ID     string `json:"checkpointId"`
	Number int    `json:"-"`
	Path   string `json:"path"`
}

// latestPointer is the content of _latest.json.
type latestPointer struct {
	CheckpointID string `json:"checkpoint_id"`
	Path         string `json:"path"`
	CreatedAt    string `json:"created_at"`
}

// Dir is the checkpoint directory of a session key.
func (s *Store) Dir(key string) string {
	return filepath.Join(s.StateDir, "context", "checkpoints", SanitizeKey(key))
}

// StateFilesDir is the incremental-state directory of a session key.
func (s *Store) StateFilesDir(key string) string {
	return filepath.Join(s.StateDir, "context", "state", SanitizeKey(key))
}

func (s *Store) keep() int {
	if s.Keep <= 0 {
		return DefaultKeep
	}
	return s.Keep
}

// List returns the session's checkpoint files, oldest first.
func (s *Store) List(key string) ([]Entry, error) {
	dir := s.Dir(key)
	des, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list checkpoints in %s: %w", dir, err)
	}
	var out []Entry
	for _, de := range des {
		name := de.Name()
		if filepath.Ext(name) != ".yaml" || !de.Type().IsRegular() {
			continue
		}
		id := name[:len(name)-len(".yaml")]
		if n := idNumber(id); n >= 0 {
			out = append(out, Entry{ID: id, Number: n, Path: filepath.Join(dir, name)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Number < out[j].Number })
	return out, nil
}

// Load reads one checkpoint by id.
func (s *Store) Load(key, id string) (*Checkpoint, error) {
	if !ValidID(id) {
		return nil, fmt.Errorf("checkpoint id %q is not of the form cp_NNN (see 'ctxtool restore --list')", id)
	}
	path := filepath.Join(s.Dir(key), id+".yaml")
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("checkpoint %s not found in %s (see 'ctxtool restore --list')", id, s.Dir(key))
	}
	if err != nil {
		return nil, err
	}
	cp, err := Unmarshal(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if cp.Meta.CheckpointID != id {
		return nil, fmt.Errorf("%s: meta.checkpoint_id is %q, want %q", path, cp.Meta.CheckpointID, id)
	}
	return cp, nil
}

func (s *Store) readPointer(key string) (*latestPointer, error) {
	data, err := os.ReadFile(filepath.Join(s.Dir(key), latestFile))
	if err != nil {
		return nil, err
	}
	var p latestPointer
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(s.Dir(key), latestFile), err)
	}
	if !ValidID(p.CheckpointID) {
		return nil, fmt.Errorf("%s: checkpoint_id %q is not of the form cp_NNN", filepath.Join(s.Dir(key), latestFile), p.CheckpointID)
	}
	return &p, nil
}

var prevRE = lazyre.New(`(?m)^\s*previous_checkpoint:\s*"?(cp_[0-9]{3,9})"?\s*$`)

// Latest returns the newest readable checkpoint. It starts at _latest.json
// (or the highest-numbered file when the pointer is missing or broken) and,
// when that file is corrupt, walks previous_checkpoint back (read from the
// raw bytes when the YAML no longer parses, else the next lower number),
// returning one warning per checkpoint it had to skip.
func (s *Store) Latest(key string) (*Checkpoint, []string, error) {
	list, err := s.List(key)
	if err != nil {
		return nil, nil, err
	}
	var warnings []string
	exists := map[string]bool{}
	for _, e := range list {
		exists[e.ID] = true
	}
	start := ""
	p, perr := s.readPointer(key)
	switch {
	case perr == nil && exists[p.CheckpointID]:
		start = p.CheckpointID
	case perr == nil:
		warnings = append(warnings, fmt.Sprintf("%s points at %s, which does not exist; using the newest checkpoint file", latestFile, p.CheckpointID))
	case !errors.Is(perr, fs.ErrNotExist):
		warnings = append(warnings, fmt.Sprintf("%v; using the newest checkpoint file", perr))
	}
	if len(list) == 0 {
		return nil, warnings, fmt.Errorf("%w for session key %q in %s (run 'ctxtool checkpoint FILE' first)", ErrNoCheckpoint, key, s.Dir(key))
	}
	if start == "" {
		start = list[len(list)-1].ID
	}
	visited := map[string]bool{}
	for id := start; id != ""; {
		visited[id] = true
		cp, err := s.Load(key, id)
		if err == nil {
			return cp, warnings, nil
		}
		next := s.previousOf(key, id, list, visited)
		to := "nothing older"
		if next != "" {
			to = next
		}
		warnings = append(warnings, fmt.Sprintf("checkpoint %s is unreadable (%v); falling back to %s", id, err, to))
		id = next
	}
	return nil, warnings, fmt.Errorf("no readable checkpoint for session key %q in %s: all are corrupt (delete them or write a new one with 'ctxtool checkpoint --force')", key, s.Dir(key))
}

// previousOf finds where to fall back to from a broken checkpoint: its own
// previous_checkpoint line if that still reads and exists, else the newest
// existing checkpoint numbered below it.
func (s *Store) previousOf(key, id string, list []Entry, visited map[string]bool) string {
	n := idNumber(id)
	if data, err := os.ReadFile(filepath.Join(s.Dir(key), id+".yaml")); err == nil {
		if m := prevRE().FindSubmatch(data); m != nil {
			prev := string(m[1])
			if pn := idNumber(prev); pn >= 0 && pn < n && !visited[prev] {
				for _, e := range list {
					if e.ID == prev {
						return prev
					}
				}
			}
		}
	}
	for i := len(list) - 1; i >= 0; i-- {
		if list[i].Number < n && !visited[list[i].ID] {
			return list[i].ID
		}
	}
	return ""
}

// WriteResult says what Write did.
type WriteResult struct {
	Entry
	Pruned []string // checkpoint ids deleted by retention
}

// Write stores cp as the session's next checkpoint: it assigns
// meta.checkpoint_id and meta.previous_checkpoint, writes cp_NNN.yaml once
// (temp file, fsync, hard link: an existing file is never replaced), points
// _latest.json at it and deletes all but the newest Keep checkpoints.
func (s *Store) Write(key string, cp *Checkpoint) (*WriteResult, error) {
	dir := s.Dir(key)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create checkpoint directory: %w (check --state-dir)", err)
	}
	for attempt := 0; attempt < 20; attempt++ {
		list, err := s.List(key)
		if err != nil {
			return nil, err
		}
		next, prev := 1, ""
		if len(list) > 0 {
			next = list[len(list)-1].Number + 1
		}
		if p, err := s.readPointer(key); err == nil {
			if n := idNumber(p.CheckpointID); n >= next {
				next = n + 1
			}
		}
		if latest, _, err := s.Latest(key); err == nil {
			prev = latest.Meta.CheckpointID
		}
		if !s.KeepSecrets {
			secrets.RedactFields(cp)
		}
		cp.Schema, cp.SchemaVersion = Schema, SchemaVersion
		cp.Meta.CheckpointID = formatID(next)
		cp.Meta.PreviousCheckpoint = prev
		data, err := Marshal(cp)
		if err != nil {
			return nil, err
		}
		path := filepath.Join(dir, cp.Meta.CheckpointID+".yaml")
		err = writeOnce(path, data)
		if errors.Is(err, fs.ErrExist) {
			continue // another writer took this number
		}
		if err != nil {
			return nil, fmt.Errorf("write %s: %w", path, err)
		}
		ptr, _ := json.MarshalIndent(latestPointer{CheckpointID: cp.Meta.CheckpointID, Path: path, CreatedAt: cp.Meta.CreatedAt}, "", "  ")
		if err := writeAtomic(filepath.Join(dir, latestFile), append(ptr, '\n')); err != nil {
			return nil, fmt.Errorf("update %s: %w", filepath.Join(dir, latestFile), err)
		}
		res := &WriteResult{Entry: Entry{ID: cp.Meta.CheckpointID, Number: next, Path: path}}
		res.Pruned, err = s.prune(key)
		return res, err
	}
	return nil, fmt.Errorf("write checkpoint in %s: too many concurrent writers", dir)
}

// prune deletes the oldest checkpoint files beyond Keep. Files are
// only ever deleted whole, never modified.
func (s *Store) prune(key string) ([]string, error) {
	list, err := s.List(key)
	if err != nil {
		return nil, err
	}
	var removed []string
	for i := 0; i < len(list)-s.keep(); i++ {
		if err := os.Remove(list[i].Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return removed, fmt.Errorf("retention: %w", err)
		}
		removed = append(removed, list[i].ID)
	}
	return removed, nil
}

// Dedupe reports whether a new checkpoint at inputTokens would duplicate
// last: the input tokens changed by less than threshold (a fraction) since
// it. It also returns the relative change.
func Dedupe(last *Checkpoint, inputTokens int, threshold float64) (bool, float64) {
	if last == nil {
		return false, 1
	}
	old := last.Meta.TokenUsage.InputTokens
	var delta float64
	switch {
	case old == 0 && inputTokens == 0:
		delta = 0
	case old == 0:
		delta = 1
	default:
		delta = math.Abs(float64(inputTokens-old)) / float64(old)
	}
	return delta < threshold, delta
}

// writeOnce writes data to path atomically and refuses to replace an
// existing file (fs.ErrExist): checkpoints are immutable once written.
func writeOnce(path string, data []byte) error {
	tmp, err := writeTemp(path, data)
	if err != nil {
		return err
	}
	defer safefile.Forget(tmp)
	defer os.Remove(tmp)
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return err
		}
		// No hard links here (some Windows and network file systems):
		// check, then rename. The window between the two is accepted.
		if _, serr := os.Lstat(path); serr == nil {
			return fs.ErrExist
		}
		if err := os.Rename(tmp, path); err != nil {
			return err
		}
	}
	syncDir(filepath.Dir(path))
	return nil
}

// writeAtomic replaces path with data (temp file in the same directory,
// fsync, rename; on Windows a rename over a file held open elsewhere can
// fail with EPERM, so it retries once after removing the target).
func writeAtomic(path string, data []byte) error {
	tmp, err := writeTemp(path, data)
	if err != nil {
		return err
	}
	defer safefile.Forget(tmp)
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(path)
		if err2 := os.Rename(tmp, path); err2 != nil {
			os.Remove(tmp)
			return err
		}
	}
	syncDir(filepath.Dir(path))
	return nil
}

// writeTemp writes data to a temp file next to path, named with this
// process's pid so that a later run removes it if the process is killed
// (it sweeps the directory first).
func writeTemp(path string, data []byte) (string, error) {
	safefile.SweepOnce(filepath.Dir(path))
	f, err := safefile.CreateTemp(path, 0o600)
	if err != nil {
		return "", err
	}
	name := f.Name()
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(name)
		return "", err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(name)
		return "", err
	}
	if err := f.Close(); err != nil {
		os.Remove(name)
		return "", err
	}
	safefile.CrashPoint("temp-written")
	return name, nil
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

// modTime of a path, zero when missing.
func modTime(path string) time.Time {
	fi, err := os.Stat(path)
	if err != nil {
		return time.Time{}
	}
	return fi.ModTime()
}

// Listing is one checkpoint of a session as restore --list shows it: what
// its file says, or why it cannot be read.
type Listing struct {
	ID          string  `json:"checkpointId"`
	Path        string  `json:"path"`
	Latest      bool    `json:"latest"`
	CreatedAt   string  `json:"createdAt,omitempty"`
	Trigger     string  `json:"trigger,omitempty"`
	InputTokens int     `json:"inputTokens,omitempty"`
	Utilization float64 `json:"utilization,omitempty"`
	Previous    string  `json:"previousCheckpoint,omitempty"`
	Error       string  `json:"error,omitempty"`
}

// Listings reads every checkpoint of key, newest first; a corrupt one is
// listed with its error (and the latest readable one is marked latest).
func (s *Store) Listings(key string) ([]Listing, error) {
	entries, err := s.List(key)
	if err != nil {
		return nil, err
	}
	latestID := ""
	if cp, _, err := s.Latest(key); err == nil {
		latestID = cp.Meta.CheckpointID
	}
	rows := []Listing{}
	for i := len(entries) - 1; i >= 0; i-- {
		e := entries[i]
		row := Listing{ID: e.ID, Path: e.Path, Latest: e.ID == latestID}
		if cp, err := s.Load(key, e.ID); err != nil {
			row.Error = err.Error()
		} else {
			row.CreatedAt, row.Trigger = cp.Meta.CreatedAt, cp.Meta.Trigger
			row.InputTokens, row.Utilization = cp.Meta.TokenUsage.InputTokens, cp.Meta.TokenUsage.Utilization
			row.Previous = cp.Meta.PreviousCheckpoint
		}
		rows = append(rows, row)
	}
	return rows, nil
}
