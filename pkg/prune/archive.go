package prune

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/ctxtool/ctxtool/pkg/filelock"
	"github.com/ctxtool/ctxtool/pkg/safefile"
	"github.com/ctxtool/ctxtool/pkg/sessionwrite"
)

// An archive is one zstd frame holding the session's bytes, followed by a
// skippable frame (which every zstd reader skips, so `zstd -d` and
// pkg/formats read the session as it was) holding the Info as JSON, then
// its length and footerMagic: the archive describes itself, so a crash
// between writing it and updating a manifest loses nothing the next run
// cannot rebuild, and unarchive needs nothing but the file.
const footerMagic = "CTXARCH1"

// skippableMagic is zstd's skippable frame magic 0x184D2A50 with user
// nibble 0xC, little-endian.
var skippableMagic = []byte{0x5C, 0x2A, 0x4D, 0x18}

// Info is what an archive records about the session it holds.
type Info struct {
	// Original is the absolute path of the session file archived.
	Original string `json:"original"`
	// SHA256 and Size are the original bytes'.
	SHA256  string      `json:"sha256"`
	Size    int64       `json:"size"`
	ModTime time.Time   `json:"mtime"`
	Mode    fs.FileMode `json:"mode"`
	// Session is the session id of its first line, when it has one.
	Session    string    `json:"session,omitempty"`
	Lines      int       `json:"lines"`
	ArchivedAt time.Time `json:"archivedAt"`
	// Blobs is the image store the archive's references point into ("":
	// not deduplicated); StoredSHA256 and StoredSize are then the bytes
	// the archive decompresses to, BlobBytes the payload bytes replaced by
	// references and BlobsAdded the bytes this archive added to the store.
	Blobs        string `json:"blobs,omitempty"`
	StoredSHA256 string `json:"storedSha256,omitempty"`
	StoredSize   int64  `json:"storedSize,omitempty"`
	BlobBytes    int64  `json:"blobBytes,omitempty"`
	BlobsAdded   int64  `json:"blobsAdded,omitempty"`
}

// Suffix is appended to a session file's name to name its archive.
const Suffix = ".zst"

// ReadInfo reads the Info of an archive ctxtool wrote; ok is false for any
// other file (Codex's own .zst rollouts, OpenClaw's cold archives).
func ReadInfo(path string) (info *Info, ok bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, false, err
	}
	return readInfo(f, st.Size())
}

func readInfo(r io.ReaderAt, size int64) (*Info, bool, error) {
	const tail = 4 + len(footerMagic)
	if size < int64(tail+8) {
		return nil, false, nil
	}
	var t [tail]byte
	if _, err := r.ReadAt(t[:], size-int64(tail)); err != nil {
		return nil, false, err
	}
	if string(t[4:]) != footerMagic {
		return nil, false, nil
	}
	n := int64(binary.LittleEndian.Uint32(t[:4]))
	start := size - int64(tail) - n - 8
	if n > 1<<20 || start < 0 {
		return nil, false, nil
	}
	buf := make([]byte, n+8)
	if _, err := r.ReadAt(buf, start); err != nil {
		return nil, false, err
	}
	if !bytes.Equal(buf[:4], skippableMagic) || int64(binary.LittleEndian.Uint32(buf[4:8])) != n+int64(tail) {
		return nil, false, nil
	}
	var info Info
	if err := json.Unmarshal(buf[8:], &info); err != nil || info.Original == "" || len(info.SHA256) != 64 {
		return nil, false, nil
	}
	return &info, true, nil
}

// footer is the skippable frame that carries info.
func footer(info *Info) ([]byte, error) {
	js, err := json.Marshal(info)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.Write(skippableMagic)
	binary.Write(&b, binary.LittleEndian, uint32(len(js)+4+len(footerMagic)))
	b.Write(js)
	binary.Write(&b, binary.LittleEndian, uint32(len(js)))
	b.WriteString(footerMagic)
	return b.Bytes(), nil
}

// Skip is a session left alone, and why: the report lists it.
type Skip struct {
	File   string
	Reason string
	// Locked: another process holds the session lock.
	Locked bool
}

func (s *Skip) Error() string { return s.File + ": " + s.Reason }

// ArchiveOptions control Archive.
type ArchiveOptions struct {
	// Idle leaves alone a session modified less than this long ago.
	Idle time.Duration
	// Settle is how long the moved-away original must stay unchanged, with
	// no other process holding it open for writing, before it is removed
	// (0: DefaultSettle).
	Settle time.Duration
	// HoldWait bounds the wait for other writers to close the file (0:
	// DefaultHoldWait); a session still held then is restored, not archived.
	HoldWait time.Duration
	// Now is the clock (tests).
	Now func() time.Time
	// BlobStore, when set, deduplicates the session's inline images into
	// this content-addressed store (pi/OpenClaw JSONL only: the caller
	// decides; see Dehydrate).
	BlobStore string
}

// DefaultSettle and DefaultHoldWait: see ArchiveOptions. The settle time
// is Rewrite's (sessionwrite.DefaultSettle): pi opens the file by path for
// every append, so only an open made just before the move can still write
// to it, and /proc shows who holds it open meanwhile.
const (
	DefaultSettle   = sessionwrite.DefaultSettle
	DefaultHoldWait = 5 * time.Second
)

func (o ArchiveOptions) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

// Archive compresses the session file path into dest (path+Suffix in
// place) and removes the original, under the session lock. It returns a
// *Skip error for a session it left alone (locked, recently written,
// appended to while it worked, archive name taken).
//
// Crash safety, step by step: the archive is written to a temp file
// (pid in its name: a later run removes it), synced, decompressed and
// compared with the original's sha256, then renamed into place — from then
// on the session is readable from the archive. The original is then renamed
// to a hidden name (.NAME.ctxtool-pruning-PID), watched until no process
// holds it and it stayed unchanged for Settle, and only then removed; if it
// changed, it goes back (with whatever a writer put at the old name
// meanwhile appended) and the archive is dropped. A kill -9 at any point
// leaves the original, or the verified archive plus the hidden original,
// which Recover puts back.
func Archive(ctx context.Context, path, dest string, opts ArchiveOptions) (*Info, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	lst, err := os.Lstat(abs)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, safefile.PathCause(err))
	}
	if lst.Mode()&os.ModeSymlink != 0 {
		return nil, &Skip{File: path, Reason: "a symbolic link: archive the file it points to"}
	}
	if err := safefile.CheckRegular(path, lst); err != nil {
		return nil, err
	}
	lock, err := filelock.Acquire(ctx, abs, 0)
	if err != nil {
		var le *filelock.LockedError
		if errors.As(err, &le) {
			return nil, &Skip{File: path, Reason: "locked: " + le.Error(), Locked: true}
		}
		return nil, err
	}
	defer lock.Release()

	st0, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, safefile.PathCause(err))
	}
	if s, ok := st0.Sys().(*syscall.Stat_t); ok && s.Nlink > 1 {
		return nil, &Skip{File: path, Reason: fmt.Sprintf("has %d hard links: removing one name would leave the others; archive a copy", s.Nlink)}
	}
	if age := opts.now().Sub(st0.ModTime()); opts.Idle > 0 && age < opts.Idle {
		return nil, &Skip{File: path, Reason: fmt.Sprintf("written %s ago, within --idle %s: possibly live", age.Round(time.Second), opts.Idle)}
	}
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return nil, fmt.Errorf("%s: cannot create the archive directory: %w", dest, safefile.PathCause(err))
	}
	safefile.SweepOnce(filepath.Dir(dest))

	info, done, err := existing(abs, dest, st0)
	if err != nil {
		return nil, err
	}
	if !done {
		info, err = compress(abs, dest, st0, opts)
		if err != nil {
			return nil, err
		}
	}
	// The archive is in place and verified: remove the original.
	if err := removeOriginal(abs, dest, st0, opts); err != nil {
		return nil, err
	}
	return info, nil
}

// existing checks a file already at dest. done is true when it is a
// verified archive of exactly the original as it is now (a run killed
// after its rename); a stale archive of ours whose bytes the original
// still starts with is removed; anything else refuses.
func existing(abs, dest string, st0 os.FileInfo) (*Info, bool, error) {
	if _, err := os.Lstat(dest); errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	info, ok, err := ReadInfo(dest)
	if err != nil {
		return nil, false, fmt.Errorf("%s: %w", dest, safefile.PathCause(err))
	}
	if !ok || info.Original != abs {
		return nil, false, &Skip{File: abs, Reason: fmt.Sprintf("%s already exists and is not an archive of this session: move it away", dest)}
	}
	sum, n, err := prefixSum(abs, info.Size)
	if err != nil {
		return nil, false, err
	}
	if n != info.Size || sum != info.SHA256 {
		return nil, false, &Skip{File: abs, Reason: fmt.Sprintf("%s is an archive of an earlier version this file no longer starts with (rewritten since): keep both, or remove one yourself", dest)}
	}
	if err := verify(dest, info); err != nil {
		return nil, false, fmt.Errorf("%s: %w; the original is untouched: remove the archive and run again", dest, err)
	}
	if n == st0.Size() {
		return info, true, nil
	}
	// The session grew after an earlier run archived it: that archive is a
	// prefix of it, redundant.
	if err := os.Remove(dest); err != nil {
		return nil, false, err
	}
	return nil, false, nil
}

// prefixSum is the sha256 of the first n bytes of a file (fewer if it is
// shorter) and how many it read.
func prefixSum(path string, n int64) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	got, err := io.Copy(h, io.LimitReader(f, n))
	if err != nil {
		return "", got, err
	}
	return hex.EncodeToString(h.Sum(nil)), got, nil
}

// compress writes the verified archive of abs (as it was at st0) to dest.
func compress(abs, dest string, st0 os.FileInfo, opts ArchiveOptions) (*Info, error) {
	f, err := os.Open(abs)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", abs, safefile.PathCause(err))
	}
	defer f.Close()
	tmp, fail, err := tempFor(dest, st0.Mode().Perm())
	if err != nil {
		return nil, err
	}
	name := tmp.Name()
	defer safefile.Forget(name)
	enc, err := zstd.NewWriter(tmp, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(zstd.SpeedDefault))
	if err != nil {
		return fail(err)
	}
	h := sha256.New()
	lc := &lineCounter{}
	src := io.TeeReader(io.LimitReader(f, st0.Size()), io.MultiWriter(h, lc))
	var n int64
	var dd *dehydrated
	if opts.BlobStore != "" && st0.Size() <= dedupeLimit {
		dd, err = dehydrate(src, st0.Size(), opts.BlobStore)
		if err == nil && dd != nil {
			n = dd.size
			_, err = enc.Write(dd.data)
		}
	}
	if err == nil && dd == nil {
		n, err = io.Copy(enc, src)
	}
	if cerr := enc.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fail(fmt.Errorf("%s: archiving failed, original untouched: %w", abs, err))
	}
	if n != st0.Size() {
		return fail(&Skip{File: abs, Reason: "shrank while being archived (rewritten): left alone"})
	}
	info := &Info{Original: abs, SHA256: hex.EncodeToString(h.Sum(nil)), Size: n, ModTime: st0.ModTime().UTC(),
		Mode: st0.Mode().Perm(), Session: lc.session(), Lines: lc.lines(), ArchivedAt: opts.now().UTC()}
	if dd != nil && dd.replaced > 0 {
		info.Blobs, info.StoredSHA256, info.StoredSize = opts.BlobStore, dd.sum, int64(len(dd.data))
		if rel, err := filepath.Rel(filepath.Dir(dest), opts.BlobStore); err == nil {
			info.Blobs = rel // the tree can move with its archives and store
		}
		info.BlobBytes, info.BlobsAdded = dd.replaced, dd.added
	}
	foot, err := footer(info)
	if err != nil {
		return fail(err)
	}
	if _, err := tmp.Write(foot); err != nil {
		return fail(err)
	}
	if err := tmp.Sync(); err != nil {
		return fail(err)
	}
	safefile.CrashPoint("prune-temp-written")
	if err := verify(name, info); err != nil {
		return fail(fmt.Errorf("%s: the archive does not decompress to the original (%w); original untouched", abs, err))
	}
	if info.Blobs != "" {
		if err := loadsAlike(abs, name); err != nil {
			return fail(fmt.Errorf("%s: deduplicated, the session would not load as before (%w); original untouched: archive it without --dedupe", abs, err))
		}
	}
	// Appended to (or replaced) while we read it: not archived.
	if st1, err := os.Stat(abs); err != nil || !unchanged(st0, st1) {
		return fail(&Skip{File: abs, Reason: "appended to while being archived: left alone (the next run tries again)"})
	}
	if err := tmp.Close(); err != nil {
		return fail(err)
	}
	if err := safefile.Critical(func() error { return os.Rename(name, dest) }); err != nil {
		return fail(err)
	}
	safefile.SyncDir(filepath.Dir(dest))
	safefile.CrashPoint("prune-archive-renamed")
	return info, nil
}

// tempFor creates a temp file next to target (safefile.CreateTemp: it
// carries our pid, and an interrupt removes it) and fail, which closes and
// removes it and returns err.
func tempFor(target string, perm fs.FileMode) (*os.File, func(error) (*Info, error), error) {
	tmp, err := safefile.CreateTemp(target, perm)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: cannot create a temp file next to it: %w", target, safefile.PathCause(err))
	}
	return tmp, func(err error) (*Info, error) {
		tmp.Close()
		os.Remove(tmp.Name())
		return nil, err
	}, nil
}

func unchanged(a, b os.FileInfo) bool {
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}

// verify decompresses an archive and checks it gives the bytes info
// describes (after putting its images back, when it was deduplicated).
func verify(path string, info *Info) error {
	if info.Blobs != "" {
		_, err := restored(path, info)
		return err
	}
	sum, n, err := decompressTo(path, io.Discard)
	if err != nil {
		return err
	}
	if n != info.Size || sum != info.SHA256 {
		return fmt.Errorf("decompresses to %d bytes with sha256 %s, recorded %d bytes with sha256 %s", n, sum, info.Size, info.SHA256)
	}
	return nil
}

// restored is the original bytes of a deduplicated archive: decompressed,
// checked, images put back from the store, checked again.
func restored(path string, info *Info) ([]byte, error) {
	var b bytes.Buffer
	sum, n, err := decompressTo(path, &b)
	if err != nil {
		return nil, err
	}
	if n != info.StoredSize || sum != info.StoredSHA256 {
		return nil, fmt.Errorf("decompresses to %d bytes with sha256 %s, recorded %d bytes with sha256 %s", n, sum, info.StoredSize, info.StoredSHA256)
	}
	store := info.Blobs
	if !filepath.IsAbs(store) {
		store = filepath.Join(filepath.Dir(path), store)
	}
	data, err := Rehydrate(b.Bytes(), store)
	if err != nil {
		return nil, err
	}
	if s := sha256.Sum256(data); int64(len(data)) != info.Size || hex.EncodeToString(s[:]) != info.SHA256 {
		return nil, fmt.Errorf("with its images put back it has %d bytes with sha256 %s, recorded %d bytes with sha256 %s", len(data), hex.EncodeToString(s[:]), info.Size, info.SHA256)
	}
	return data, nil
}

// decompressTo writes an archive's decompressed bytes to w and returns
// their sha256 and length.
func decompressTo(path string, w io.Writer) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	dec, err := zstd.NewReader(f, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
	if err != nil {
		return "", 0, err
	}
	defer dec.Close()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(w, h), dec)
	if err != nil {
		return "", n, fmt.Errorf("zstd: %w", err)
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// lineCounter counts lines and keeps the first one (for the session id).
type lineCounter struct {
	n     int
	first []byte
	done  bool
	last  byte
}

func (c *lineCounter) Write(p []byte) (int, error) {
	if !c.done {
		if i := bytes.IndexByte(p, '\n'); i >= 0 {
			c.first = append(c.first, p[:i]...)
			c.done = true
		} else if len(c.first) < 64<<10 {
			c.first = append(c.first, p...)
		}
	}
	c.n += bytes.Count(p, []byte{'\n'})
	if len(p) > 0 {
		c.last = p[len(p)-1]
	}
	return len(p), nil
}

func (c *lineCounter) lines() int {
	if c.last != 0 && c.last != '\n' {
		return c.n + 1
	}
	return c.n
}

// session is the id the first line names: pi's header id, Claude Code's
// sessionId, Codex's session_meta payload id.
func (c *lineCounter) session() string {
	var h struct {
		ID        string `json:"id"`
		SessionID string `json:"sessionId"`
		Payload   struct {
			ID string `json:"id"`
		} `json:"payload"`
	}
	if json.Unmarshal(c.first, &h) != nil {
		return ""
	}
	switch {
	case h.ID != "":
		return h.ID
	case h.SessionID != "":
		return h.SessionID
	}
	return h.Payload.ID
}

// movedMarker names an original moved aside while its archive is
// committed: .NAME.ctxtool-pruning-PID. Not a temp file (safefile.Sweep
// leaves it): it holds a session, and Recover puts it back.
const movedMarker = ".ctxtool-pruning-"

func movedName(abs string) string {
	return filepath.Join(filepath.Dir(abs), "."+filepath.Base(abs)+movedMarker+strconv.Itoa(os.Getpid()))
}

// removeOriginal moves the archived original aside, waits until no writer
// holds it and it stayed as archived, and removes it; otherwise it puts it
// back and drops the archive.
func removeOriginal(abs, dest string, st0 os.FileInfo, opts ArchiveOptions) error {
	moved := movedName(abs)
	if err := os.Rename(abs, moved); err != nil {
		return fmt.Errorf("%s: archived to %s, but the original could not be removed: %w", abs, dest, safefile.PathCause(err))
	}
	safefile.SyncDir(filepath.Dir(abs))
	safefile.CrashPoint("prune-original-moved")
	if quiet(moved, st0, opts) {
		if _, err := os.Lstat(abs); errors.Is(err, fs.ErrNotExist) {
			if err := os.Remove(moved); err != nil {
				return err
			}
			safefile.SyncDir(filepath.Dir(abs))
			return nil
		}
	}
	// A writer reached the file: the session stays where it was.
	if err := putBack(moved, abs, opts); err != nil {
		return err
	}
	os.Remove(dest)
	safefile.SyncDir(filepath.Dir(dest))
	return &Skip{File: abs, Reason: "appended to while being archived: restored, archive dropped (the next run tries again)"}
}

// quiet waits until no other process holds moved open for writing and it
// has been unchanged from st0 for the settle time; false as soon as it
// changes, or when writers still hold it after the hold wait.
func quiet(moved string, st0 os.FileInfo, opts ArchiveOptions) bool {
	settle, hold := opts.Settle, opts.HoldWait
	if settle <= 0 {
		settle = DefaultSettle
	}
	if hold <= 0 {
		hold = DefaultHoldWait
	}
	start := time.Now()
	for {
		st, err := os.Stat(moved)
		if err != nil || !unchanged(st0, st) {
			return false
		}
		pids, _ := filelock.Writers(st)
		if len(pids) == 0 && time.Since(start) >= settle {
			// One more look: a writer writes before it closes.
			st, err := os.Stat(moved)
			return err == nil && unchanged(st0, st)
		}
		if time.Since(start) > hold {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// putBack returns a moved-aside original to its name. When a writer made a
// new file there meanwhile (pi creates the file it appends to), that file
// is renamed to .NAME.ctxtool-pruning-PID-lateN and its bytes appended
// after the original's, in the order they were written, until the name is
// free; then whatever writers still put into a late file (opened just
// before its rename) is appended too, and the late files go.
func putBack(moved, abs string, opts ArchiveOptions) error {
	type lateFile struct {
		name string
		used int64
	}
	var lates []lateFile
	linked := false
	for round := 0; round < 1000; round++ {
		err := os.Link(moved, abs)
		if err == nil {
			linked = true
			break
		}
		if a, b := stat2(moved, abs); len(lates) == 0 && a != nil && b != nil && os.SameFile(a, b) {
			// A run killed between the link and the removal.
			return os.Remove(moved)
		}
		if !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s: cannot put the session back from %s (it is complete there: rename it yourself): %w", abs, moved, safefile.PathCause(err))
		}
		late := moved + "-late" + strconv.Itoa(round)
		if err := os.Rename(abs, late); err != nil {
			return fmt.Errorf("%s: cannot merge what a writer added into %s: %w", abs, moved, safefile.PathCause(err))
		}
		n, err := appendFrom(moved, late, 0)
		if err != nil {
			return fmt.Errorf("%s: cannot merge %s into %s (both are complete: concatenate them yourself): %w", abs, late, moved, err)
		}
		lates = append(lates, lateFile{late, n})
	}
	if !linked {
		return fmt.Errorf("%s: a writer keeps recreating the file; the session is complete in %s: rename it back once the writer stops", abs, moved)
	}
	safefile.SyncDir(filepath.Dir(abs))
	if err := os.Remove(moved); err != nil {
		return err
	}
	for _, l := range lates {
		if st, err := os.Stat(l.name); err == nil {
			waitClosed(l.name, st, opts)
		}
		if _, err := appendFrom(abs, l.name, l.used); err != nil {
			return fmt.Errorf("%s: cannot append the last lines of %s (append them yourself): %w", abs, l.name, err)
		}
		os.Remove(l.name)
	}
	safefile.SyncDir(filepath.Dir(abs))
	return nil
}

// waitClosed waits until no other process holds path open for writing and
// it stopped growing for the settle time (at most the hold wait).
func waitClosed(path string, st os.FileInfo, opts ArchiveOptions) {
	for deadline := time.Now().Add(max(opts.HoldWait, DefaultHoldWait)); time.Now().Before(deadline); {
		if quiet(path, st, opts) {
			return
		}
		var err error
		if st, err = os.Stat(path); err != nil {
			return
		}
	}
}

// appendFrom appends the bytes of src from offset on to dst, syncs dst and
// returns the size of src it read up to.
func appendFrom(dst, src string, offset int64) (int64, error) {
	in, err := os.Open(src)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(out, io.NewSectionReader(in, offset, 1<<62))
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return offset + n, err
}

// Recover puts back the originals that a killed run had moved aside
// (.NAME.ctxtool-pruning-PID of a dead PID, and its -lateN companions) in
// the directories under roots, skipping hidden directories as pkg/walk
// does. Put back, such a session is archived again by the next run (its
// archive, already verified, is reused). It returns what it restored.
func Recover(roots []string) ([]string, error) {
	var restored []string
	var errs []error
	for _, root := range roots {
		st, err := os.Stat(root)
		if err != nil || !st.IsDir() {
			continue
		}
		moved := map[string][]string{} // moved-aside original → its late files
		var orphanLocks []string       // sessions gone to their archive, lock still there
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if d.IsDir() {
				if p != root && strings.HasPrefix(d.Name(), ".") {
					return filepath.SkipDir
				}
				return nil
			}
			name := d.Name()
			if session, ok := strings.CutSuffix(p, ".lock"); ok && !exists(session) && exists(session+Suffix) {
				orphanLocks = append(orphanLocks, session)
				return nil
			}
			i := strings.LastIndex(name, movedMarker)
			if i < 1 || name[0] != '.' {
				return nil
			}
			rest := name[i+len(movedMarker):]
			pidText, _, isLate := strings.Cut(rest, "-late")
			pid, err := strconv.Atoi(pidText)
			if err != nil || safefile.PidAlive(pid) {
				return nil // not ours, or a live run's
			}
			orig := filepath.Join(filepath.Dir(p), name[:i+len(movedMarker)]+pidText)
			if isLate {
				moved[orig] = append(moved[orig], p)
			} else if _, ok := moved[orig]; !ok {
				moved[orig] = nil
			}
			return nil
		})
		for m, lates := range moved {
			base := filepath.Base(m)
			abs := filepath.Join(filepath.Dir(m), base[1:strings.LastIndex(base, movedMarker)])
			if err := recoverOne(m, abs, lates); err != nil {
				errs = append(errs, err)
				continue
			}
			restored = append(restored, abs)
		}
		// A run killed after archiving, before releasing the lock, leaves
		// a stale lock beside the archive: taking it over (only when its
		// holder is dead) and releasing it removes it.
		for _, session := range orphanLocks {
			if l, err := filelock.Acquire(context.Background(), session, 0); err == nil {
				l.Release()
			}
		}
	}
	return restored, errors.Join(errs...)
}

// recoverOne puts a moved-aside original back, with the lines of its late
// files that it lacks; when the original is gone (the run was killed after
// putting it back), the late files' missing lines go to the session.
func recoverOne(moved, abs string, lates []string) error {
	sort.Slice(lates, func(i, j int) bool { return lateRound(lates[i]) < lateRound(lates[j]) })
	target := moved
	if !exists(moved) {
		target = abs
	}
	for _, l := range lates {
		if err := mergeLines(target, l); err != nil {
			return fmt.Errorf("%s: cannot merge %s into %s (append its lines yourself): %w", abs, l, target, err)
		}
	}
	if target == abs {
		return nil
	}
	return putBack(moved, abs, ArchiveOptions{})
}

func lateRound(name string) int {
	_, r, _ := strings.Cut(name[strings.LastIndex(name, movedMarker):], "-late")
	n, _ := strconv.Atoi(r)
	return n
}

// mergeLines appends to dst the lines of src it does not hold yet (a
// killed run may have copied some or all of them; session lines are
// unique: ids, timestamps), then removes src.
func mergeLines(dst, src string) error {
	have, err := os.ReadFile(dst)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, l := range bytes.SplitAfter(have, []byte("\n")) {
		seen[string(l)] = true
	}
	var add []byte
	for _, l := range bytes.SplitAfter(data, []byte("\n")) {
		if len(l) > 0 && !seen[string(l)] {
			add = append(add, l...)
		}
	}
	if len(add) > 0 {
		out, err := os.OpenFile(dst, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return err
		}
		if _, err := out.Write(add); err != nil {
			out.Close()
			return err
		}
		if err := out.Sync(); err != nil {
			out.Close()
			return err
		}
		out.Close()
	}
	return os.Remove(src)
}

func stat2(a, b string) (os.FileInfo, os.FileInfo) {
	sa, _ := os.Lstat(a)
	sb, _ := os.Lstat(b)
	return sa, sb
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}
