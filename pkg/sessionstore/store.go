// Package sessionstore reads and updates OpenClaw's legacy session store,
// sessions.json beside the transcripts: a JSON object keyed by session key
// ("agent:main:main", "telegram:…") whose entries name their transcript
// (sessionId, sessionFile) and carry its token and compaction counters.
//
// ctxtool reads it to map a transcript to its key and compaction count, and
// writes it only the way OpenClaw does: one read-modify-write under the
// store's lock (sessions.json.lock), re-reading inside the lock, replacing
// the file atomically (temp file, fsync, rename). Every other key, entry
// and field is kept as it was, in its order.
//
// It must not change any field but those a caller patches, and must not
// write the store without its lock.
package sessionstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ctxtool/ctxtool/pkg/filelock"
	"github.com/ctxtool/ctxtool/pkg/internal/lazyre"
	"github.com/ctxtool/ctxtool/pkg/safefile"
	"github.com/ctxtool/ctxtool/pkg/sessionwrite"
)

// FileName is the store's name in a sessions directory.
const FileName = "sessions.json"

// maxStoreBytes bounds what is read (OpenClaw caps entries at 500).
const maxStoreBytes = 64 << 20

// Entry is the part of a store entry ctxtool uses. Pointers are nil when
// the field is absent.
type Entry struct {
	SessionID       string `json:"sessionId"`
	SessionFile     string `json:"sessionFile"`
	TotalTokens     *int   `json:"totalTokens"`
	InputTokens     *int   `json:"inputTokens"`
	OutputTokens    *int   `json:"outputTokens"`
	CompactionCount int    `json:"compactionCount"`
	// ContextTokens is the context window OpenClaw resolved for the
	// session's model (its window evidence).
	ContextTokens              *int `json:"contextTokens"`
	MemoryFlushCompactionCount *int `json:"memoryFlushCompactionCount"`
}

// Store is a parsed sessions.json.
type Store struct {
	Path    string
	Entries map[string]Entry
}

// Read parses <dir>/sessions.json; (nil, nil) when there is none.
func Read(dir string) (*Store, error) {
	path := filepath.Join(dir, FileName)
	data, err := readFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	st := &Store{Path: path}
	if err := json.Unmarshal(data, &st.Entries); err != nil {
		return nil, fmt.Errorf("%s: %w (OpenClaw's session store should be a JSON object of entries)", path, err)
	}
	return st, nil
}

func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxStoreBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(data) > maxStoreBytes {
		return nil, fmt.Errorf("%s: larger than %d MB; not an OpenClaw session store?", path, maxStoreBytes>>20)
	}
	return data, nil
}

// KeyFor finds the key whose entry names the transcript file (its base
// name): sessionId equal to the name without ".jsonl" and any archive
// suffix, or sessionFile ending in that name. Several keys naming one file
// resolve to the smallest; "" when none does.
func (st *Store) KeyFor(file string) string {
	if st == nil {
		return ""
	}
	base := filepath.Base(file)
	stem := Stem(base)
	best := ""
	for k, e := range st.Entries {
		if e.SessionID == stem || (e.SessionFile != "" && filepath.Base(e.SessionFile) == base) {
			if best == "" || k < best {
				best = k
			}
		}
	}
	return best
}

// Entry returns the entry of a key (false when absent or st is nil).
func (st *Store) Entry(key string) (Entry, bool) {
	if st == nil {
		return Entry{}, false
	}
	e, ok := st.Entries[key]
	return e, ok
}

// Stem is a transcript's name without ".jsonl" and what follows it (an
// archive suffix such as ".reset.<stamp>").
func Stem(base string) string {
	if i := strings.Index(base, ".jsonl"); i > 0 {
		return base[:i]
	}
	return base
}

// Ref is a transcript's entry in the store beside it.
type Ref struct {
	StorePath string
	Key       string
	Entry     Entry
}

// Find returns the store entry of a transcript, (nil, nil) when its
// directory has no store or the store does not list it.
func Find(transcriptPath string) (*Ref, error) {
	st, err := Read(filepath.Dir(transcriptPath))
	if err != nil || st == nil {
		return nil, err
	}
	k := st.KeyFor(transcriptPath)
	if k == "" {
		return nil, nil
	}
	return &Ref{StorePath: st.Path, Key: k, Entry: st.Entries[k]}, nil
}

// Patch changes fields of one entry: Set adds or replaces, Delete removes.
type Patch struct {
	Set    map[string]any
	Delete []string
}

// ErrNoEntry is returned by Update when the key is not (or no longer) in
// the store.
var ErrNoEntry = errors.New("no such entry in the session store")

// Update changes one entry under the store's lock: it re-reads the store,
// hands the entry's current state to change, applies the patch it returns
// (nil: nothing to write) and replaces the file atomically, keeping every
// other byte of meaning — other entries and fields, their order and their
// values as written. The previous file is kept as sessions.json.bak.<stamp>
// until the next update replaces that backup.
func Update(ctx context.Context, storePath, key string, wait time.Duration, change func(Entry) (*Patch, error)) error {
	lock, err := filelock.AcquireStore(ctx, storePath, wait)
	if err != nil {
		return err
	}
	defer lock.Release()
	data, err := readFile(storePath)
	if err != nil {
		return err
	}
	top, err := parseObject(data)
	if err != nil {
		return fmt.Errorf("%s: %w (not changed)", storePath, err)
	}
	i := top.index(key)
	if i < 0 {
		return fmt.Errorf("%s: %q: %w", storePath, key, ErrNoEntry)
	}
	var cur Entry
	if err := json.Unmarshal(top[i].value, &cur); err != nil {
		return fmt.Errorf("%s: entry %q: %w (not changed)", storePath, key, err)
	}
	p, err := change(cur)
	if err != nil || p == nil {
		return err
	}
	entry, err := parseObject(top[i].value)
	if err != nil {
		return fmt.Errorf("%s: entry %q: %w (not changed)", storePath, key, err)
	}
	for _, k := range p.Delete {
		entry = entry.without(k)
	}
	for _, k := range slices.Sorted(maps.Keys(p.Set)) {
		v, err := json.Marshal(p.Set[k])
		if err != nil {
			return err
		}
		entry = entry.with(k, v)
	}
	top[i].value = entry.marshal()
	var out bytes.Buffer
	if err := json.Indent(&out, top.marshal(), "", "  "); err != nil {
		return err
	}
	return replace(storePath, out.Bytes())
}

// replace writes the store atomically (temp file, fsync, rename), its mode
// kept, after keeping the previous file as sessions.json.bak.<stamp> (a
// hard link); older ctxtool backups are then removed.
func replace(storePath string, data []byte) error {
	st, err := os.Stat(storePath)
	if err != nil {
		return fmt.Errorf("%s: %w", storePath, err)
	}
	backup := storePath + ".bak." + sessionwrite.BackupStamp(time.Now())
	if err := os.Link(storePath, backup); err != nil {
		old, rerr := readFile(storePath)
		if rerr != nil {
			return rerr
		}
		if err := safefile.WriteFile(backup, old, st.Mode().Perm()); err != nil {
			return fmt.Errorf("%s: cannot keep a backup at %s: %w (not changed)", storePath, backup, err)
		}
	}
	if err := safefile.WriteFile(storePath, data, st.Mode().Perm()); err != nil {
		os.Remove(backup)
		return fmt.Errorf("%s: %w (not changed)", storePath, err)
	}
	pruneBackups(storePath, backup)
	return nil
}

// ctxtoolBackup matches the backups replace names (an ISO stamp),
// never OpenClaw's own sessions.json.bak.<digits>.
var ctxtoolBackup = lazyre.New(`\.bak\.\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}\.\d{3}Z$`)

// pruneBackups keeps only the newest ctxtool backup of the store: a store
// is updated after every compaction and flush, and one backup is enough
// to undo the last.
func pruneBackups(storePath, keep string) {
	matches, _ := filepath.Glob(storePath + ".bak.*")
	for _, m := range matches {
		if m != keep && ctxtoolBackup().MatchString(m) {
			os.Remove(m)
		}
	}
}

// member is one key of a JSON object with its value as written.
type member struct {
	key   string
	raw   json.RawMessage // the key as written (escapes kept)
	value json.RawMessage
}

type object []member

// parseObject splits a JSON object into its members, in order.
func parseObject(data []byte) (object, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("not a JSON object")
	}
	var obj object
	for dec.More() {
		start := dec.InputOffset()
		kt, err := dec.Token()
		if err != nil {
			return nil, err
		}
		k, _ := kt.(string)
		keyRaw := bytes.TrimSpace(data[start:dec.InputOffset()])
		keyRaw = bytes.TrimLeft(keyRaw, ",")
		keyRaw = bytes.TrimSpace(keyRaw)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		obj = append(obj, member{key: k, raw: append(json.RawMessage(nil), keyRaw...), value: v})
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("trailing data after the JSON object")
	}
	return obj, nil
}

func (o object) index(key string) int {
	idx := -1
	for i, m := range o {
		if m.key == key {
			idx = i // JSON.parse keeps the last duplicate
		}
	}
	return idx
}

func (o object) without(key string) object {
	out := o[:0:0]
	for _, m := range o {
		if m.key != key {
			out = append(out, m)
		}
	}
	return out
}

func (o object) with(key string, v json.RawMessage) object {
	if i := o.index(key); i >= 0 {
		o[i].value = v
		return o
	}
	k, _ := json.Marshal(key)
	return append(o, member{key: key, raw: k, value: v})
}

func (o object) marshal() []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(m.raw)
		b.WriteByte(':')
		b.Write(m.value)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// RecordCompaction updates a transcript's store entry the way OpenClaw does
// after a compaction (docs/design/openclaw-compaction.md): compactionCount + 1 and, when
// tokensAfter > 0, totalTokens = tokensAfter with the inputTokens and
// outputTokens breakdown removed (only a total estimate is known). It
// returns the entry as updated; (nil, nil) when no store lists the file.
func RecordCompaction(ctx context.Context, transcriptPath string, tokensAfter int, wait time.Duration) (*Ref, error) {
	ref, err := Find(transcriptPath)
	if err != nil || ref == nil {
		return nil, err
	}
	err = Update(ctx, ref.StorePath, ref.Key, wait, func(e Entry) (*Patch, error) {
		p := &Patch{Set: map[string]any{"compactionCount": e.CompactionCount + 1}}
		e.CompactionCount++
		if tokensAfter > 0 {
			p.Set["totalTokens"] = tokensAfter
			p.Delete = []string{"inputTokens", "outputTokens"}
			e.TotalTokens, e.InputTokens, e.OutputTokens = &tokensAfter, nil, nil
		}
		ref.Entry = e
		return p, nil
	})
	if err != nil {
		return nil, err
	}
	return ref, nil
}
