package sessionwrite

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/ctxtool/ctxtool/pkg/filelock"
	"github.com/ctxtool/ctxtool/pkg/safefile"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// RewriteOptions controls Rewrite.
type RewriteOptions struct {
	// Idle refuses (BusyError) a session modified less than this long ago.
	Idle time.Duration
	// Settle is how long Rewrite keeps watching the replaced file after
	// the rename for a writer that opened it just before (0: DefaultSettle)
	// — at least: on Linux also while another process has it open for
	// writing.
	Settle time.Duration
}

// DefaultSettle is how long after its rename Rewrite watches the old file
// for late appends. pi opens the file by path for every append, so a write
// to the old file can only come from an open made just before the rename.
// Where /proc shows who has the old file open (Linux), Rewrite also keeps
// watching while another process does, up to holdWait: a writer
// descheduled between its open and its write on a loaded machine writes
// later than any settle time.
const DefaultSettle = 50 * time.Millisecond

// holdWait bounds how long Rewrite waits for another process to close the
// replaced file (var: tests). Meanwhile the /proc scans (1-7 ms each on a
// loaded 2-core machine) start scanGap apart and back off to maxScanGap.
var holdWait = 5 * time.Second

const scanGap, maxScanGap = 5 * time.Millisecond, 100 * time.Millisecond

// carryLimit bounds the whole carry (var: tests): Rewrite holds the session
// lock until it ends, so writers that respect the lock wait for it, and a
// writer that keeps the replaced file open and keeps writing to it would
// otherwise hold everything up for ever; each carry round's file gets its
// own holdWait within it.
var carryLimit = 15 * time.Second

// errStillWriting ends a carry that stopped while other writers could
// still write where no file keeps it, or reached carryLimit.
var errStillWriting = errors.New("other writers were still writing to the file it replaced when ctxtool stopped carrying their lines")

// afterRename, when set (tests), runs right after Rewrite's rename: a
// writer that opened the old file just before it writes here.
var afterRename func()

// afterRebuild, when set (tests), runs right after a carry round's rename:
// a writer appends to the file it put in place before Rewrite looks at it.
var afterRebuild func()

// afterCarry, when set (tests), runs right after the carrier appends late
// bytes to the live file: a writer moves on before it looks again.
var afterCarry func()

// maxCarryRounds bounds the re-renames of Rewrite when late appends keep
// arriving out of order; after them late appends are carried out of order.
const maxCarryRounds = 8

// RewriteResult says what Rewrite did.
type RewriteResult struct {
	// Backup is the original file, kept as <file>.bak.<stamp>.
	Backup string
	// CarriedBytes and CarriedLines count what other writers appended
	// after the session was loaded, carried over after the new content in
	// the order it was written.
	CarriedBytes int64
	CarriedLines int
	// HeldBy lists the processes that still had the replaced file open
	// when Rewrite stopped waiting for them (holdWait): what they write to
	// it from then on is only in the backup (Rewrite fails instead when
	// they held a file a carry round replaced, which no backup keeps).
	HeldBy []int
}

// Rewrite replaces the file s was loaded from by content (which the caller
// built from s: header, new entries, kept lines), keeping the original as
// <file>.bak.<stamp>. The caller holds the session lock.
//
// Writers that ignore the lock (pi) lose nothing: whatever they appended to
// the file after s was loaded — before the rename, or after it through a
// file they had opened just before — is carried over after content in the
// order it was written, so their entries keep their parents (the last entry
// of s, which content must keep) and pi's leaf stays their last entry.
// Rewrite watches the old file until no other process has it open for
// writing (seen in /proc; after holdWait it stops and names them in HeldBy)
// and it has been quiet for opts.Settle, which alone protects writers /proc
// does not show. It carries for carryLimit at most, and fails (the file
// rewritten, the error saying where their next lines go) when it stops
// while writers could still write to a file it replaced.
// Symlinks are resolved: the real file is replaced and a link stays a link.
// The file's mode and owner are kept; a read-only file, a file with other
// hard links, a file modified within opts.Idle or one whose last line is
// incomplete is refused. Any failure before the rename leaves the file
// untouched; a kill after it leaves the full original in the backup.
func Rewrite(s *transcript.Session, content []byte, opts RewriteOptions) (*RewriteResult, error) {
	real, err := rewritablePath(s, opts.Idle)
	if err != nil {
		return nil, err
	}
	settle := opts.Settle
	if settle <= 0 {
		settle = DefaultSettle
	}
	old, ofi, err := openAsLoaded(s, real)
	if err != nil {
		return nil, err
	}
	defer old.Close()

	tmp, err := safefile.CreateTemp(real, ofi.Mode().Perm())
	if err != nil {
		return nil, fmt.Errorf("%s: cannot create a temp file next to it: %w", s.File, safefile.PathCause(err))
	}
	sw := &swap{s: s, real: real, old: old, ofi: ofi, tmp: tmp, tmpName: tmp.Name(), size: int64(len(content))}
	defer func() {
		if !sw.committed {
			tmp.Close()
			os.Remove(sw.tmpName)
		}
		safefile.Forget(sw.tmpName)
	}()
	if err := writeAll(tmp, content, ofi); err != nil {
		return nil, fmt.Errorf("%s: rewrite failed, original untouched: %w", s.File, err)
	}

	safefile.CrashPoint("rewrite-temp")
	res := &RewriteResult{}
	if err := safefile.Critical(func() error { return sw.commit(res, settle) }); err != nil {
		return nil, err
	}
	return res, nil
}

// rewritablePath checks what can be told before opening the file — not
// standard input, a tree pi can load, a writable regular file (symlinks
// resolved: the real path is returned), the session lock held by us, no
// line being written, idle for idle — and returns the path to replace.
func rewritablePath(s *transcript.Session, idle time.Duration) (string, error) {
	if s.File == "-" || s.LoadedFrom() == nil {
		return "", fmt.Errorf("-: cannot rewrite standard input; give a session file path")
	}
	if err := s.Rewritable(); err != nil {
		return "", err
	}
	real, err := transcript.WritablePath(s.File)
	if err != nil {
		return "", err
	}
	if !filelock.Held(filelock.Path(real)) {
		return "", fmt.Errorf("%s: %w", s.File, errNotLocked)
	}
	if s.Size > 0 && !s.EndsWithNewline {
		return "", ErrFileChanged // a line being written: reload once it is complete
	}
	if err := CheckIdle(real, idle); err != nil {
		var be *BusyError
		if errors.As(err, &be) {
			be.File = s.File
		}
		return "", err
	}
	return real, nil
}

// openAsLoaded opens the file to replace and checks it still starts with
// the bytes s was loaded from (ErrFileChanged otherwise) and has no other
// hard link that the rename would leave on the old content.
func openAsLoaded(s *transcript.Session, real string) (*os.File, os.FileInfo, error) {
	old, err := os.Open(real)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", s.File, safefile.PathCause(err))
	}
	fail := func(err error) (*os.File, os.FileInfo, error) {
		old.Close()
		return nil, nil, err
	}
	ofi, err := old.Stat()
	if err != nil {
		return fail(fmt.Errorf("%s: %w", s.File, err))
	}
	if !os.SameFile(ofi, s.LoadedFrom()) || ofi.Size() < s.Size {
		return fail(ErrFileChanged)
	}
	if same, err := s.SameStart(old); err != nil || !same {
		return fail(ErrFileChanged)
	}
	if st, ok := ofi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
		return fail(fmt.Errorf("%s: the file has %d hard links; replacing it would leave the other names on the old content — rewrite a copy, or remove the other links first", s.File, st.Nlink))
	}
	return old, ofi, nil
}

// swap is one rewrite's files: the original (old, as opened and stat'ed)
// and the written temp file that replaces it.
type swap struct {
	s         *transcript.Session
	real      string
	old       *os.File
	ofi       os.FileInfo
	tmp       *os.File
	tmpName   string
	size      int64 // bytes of the new content in tmp
	committed bool  // tmp was renamed over real
}

// commit keeps a backup of the original, renames the temp file over it and
// carries over what writers append to the old file meanwhile (settle: how
// long the old file must stay quiet). Run as one critical section: signals
// wait until it is done.
func (w *swap) commit(res *RewriteResult, settle time.Duration) error {
	s, real, ofi := w.s, w.real, w.ofi
	backup := real + ".bak." + BackupStamp(time.Now())
	if err := os.Link(real, backup); err != nil {
		if err := copyFile(real, backup, ofi.Mode().Perm()); err != nil {
			return fmt.Errorf("%s: cannot keep a backup at %s, original untouched: %w", s.File, backup, err)
		}
	} else if bfi, err := os.Stat(backup); err != nil || !os.SameFile(bfi, ofi) {
		os.Remove(backup)
		return ErrFileChanged // replaced under us
	}
	safefile.CrashPoint("rewrite-backup")
	if err := os.Rename(w.tmpName, real); err != nil {
		os.Remove(backup)
		return fmt.Errorf("%s: rewrite failed, original untouched: %w", s.File, err)
	}
	w.committed = true
	res.Backup = backup
	if afterRename != nil {
		afterRename()
	}
	safefile.CrashPoint("rewrite-renamed")
	safefile.SyncDir(filepath.Dir(real))
	c := carrier{path: real, first: w.old, prev: w.old, prevUsed: s.Size, cur: w.tmp, curBase: w.size, mode: ofi}
	err := c.run(settle)
	res.CarriedBytes, res.CarriedLines, res.HeldBy = c.carried, c.carriedLines, c.watch.held
	for _, f := range []*os.File{c.prev, c.cur} {
		if f != w.old && f != w.tmp {
			f.Close()
		}
	}
	w.tmp.Close()
	// The backup is a link to the original only: a file a carry round
	// replaced has no name left, so what its holders write is in no file.
	if err == nil && len(res.HeldBy) > 0 && c.prev != w.old {
		err = errStillWriting
	}
	if errors.Is(err, errStillWriting) {
		rest := "only in " + backup
		if c.prev != w.old {
			rest = "in no file (a carry round replaced it too); the original is in " + backup
		}
		return fmt.Errorf("%s: rewritten, but %w: what they wrote until then is in the live file, what they write to it from now on is %s", s.File, err, rest)
	}
	if err != nil {
		return fmt.Errorf("%s: %w; the original, with everything written to it, is in %s", s.File, err, backup)
	}
	return nil
}

// writeAll writes content to a new file, gives it the mode and owner of the
// original, and syncs it.
func writeAll(f *os.File, content []byte, orig os.FileInfo) error {
	if _, err := f.Write(content); err != nil {
		return err
	}
	if err := f.Chmod(orig.Mode().Perm()); err != nil {
		return err
	}
	if st, ok := orig.Sys().(*syscall.Stat_t); ok {
		// Only root can give a file away; others create it as its owner.
		if int(st.Uid) != os.Getuid() || int(st.Gid) != os.Getgid() {
			_ = f.Chown(int(st.Uid), int(st.Gid))
		}
	}
	return f.Sync()
}

// carrier moves what writers appended to the replaced file (prev) into the
// live one (cur) after our content, in order. Its model of a writer is pi's:
// one append after another, each opening the file by path, so once a byte
// reaches the live file nothing more reaches the old one.
type carrier struct {
	path         string
	prev         *os.File // the replaced file
	prevUsed     int64    // bytes of prev already in the live file
	cur          *os.File // the live file (ours since the rename)
	curBase      int64    // bytes of cur that are ours: content + carried
	mode         os.FileInfo
	carried      int64
	carriedLines int
	rounds       int
	first        *os.File // the original file, closed by Rewrite
	watch        holdWatch
}

func (c *carrier) run(settle time.Duration) error {
	quietSince := time.Now()
	stop := quietSince.Add(carryLimit)
	for {
		if time.Now().After(stop) {
			return c.giveUp()
		}
		// The live file first: bytes seen there were written after every
		// byte that reached prev, which is read next.
		curSize, err := size(c.cur)
		if err != nil {
			return err
		}
		quiet := time.Since(quietSince) >= settle
		// A line still being written to prev shows in part (page by page
		// on Linux): it is taken as it is only once the writer has moved
		// on to the live file, or no process has prev open any more (or
		// the hold wait ran out, or /proc cannot tell). Taken earlier, its
		// rest could be carried after the writer's next line.
		late, err := c.pending(curSize > c.curBase || quiet && c.watch.free)
		if err != nil {
			return err
		}
		if len(late) == 0 {
			if quiet && c.watch.released(c.prev) {
				return c.cur.Sync()
			}
			time.Sleep(time.Millisecond)
			continue
		}
		quietSince = time.Now()
		c.watch.free = false
		// After maxCarryRounds, each round's rename having let the writer
		// write out of order again, the rest is appended as it comes: out
		// of order, but nothing lost (failing would lose what reached the
		// file last replaced, which no backup holds).
		inOrder := c.rounds < maxCarryRounds
		if curSize == c.curBase || !inOrder {
			end, err := appendAt(c.cur, late)
			if err != nil {
				return err
			}
			if end-int64(len(late)) == c.curBase || !inOrder {
				c.curBase = end
				c.took(late)
				if afterCarry != nil {
					afterCarry()
				}
				continue
			}
			// Another append reached the live file before ours: put ours
			// back in front of it.
			if err := c.rebuild(end-int64(len(late)), int64(len(late))); err != nil {
				return err
			}
			continue
		}
		if err := c.rebuild(-1, 0); err != nil {
			return err
		}
	}
}

// giveUp ends a carry that ran for carryLimit: the whole lines that have
// reached prev are carried after everything in the live file; a line still
// being written stays with the rest of what reaches prev.
func (c *carrier) giveUp() error {
	late, err := c.pending(false)
	if err != nil {
		return err
	}
	if len(late) > 0 {
		end, err := appendAt(c.cur, late)
		if err != nil {
			return err
		}
		c.curBase = end
		c.took(late)
	}
	if err := c.cur.Sync(); err != nil {
		return err
	}
	return errStillWriting
}

// holdWatch tells when no other process has the replaced file open any
// more, so nothing can reach it: a writer writes before it closes, so once
// a scan finds no holder, one more read of the file takes its last bytes.
type holdWatch struct {
	free  bool      // the last scan found no holder (or gave up): read once more and stop
	since time.Time // when a scan first found a holder of this prev
	next  time.Time // no scan before
	gap   time.Duration
	held  []int // holders when the wait ran out
}

// released reports whether the carrier may stop: the previous call let go
// of prev and nothing arrived since (the carrier clears free when it does).
// Otherwise it scans /proc for holders of prev, when due.
func (h *holdWatch) released(prev *os.File) bool {
	if h.free {
		return true
	}
	now := time.Now()
	if now.Before(h.next) {
		return false
	}
	fi, err := prev.Stat()
	if err != nil {
		h.free = true
		return false
	}
	pids, ok := filelock.Writers(fi)
	switch {
	case !ok || len(pids) == 0:
		h.free, h.held = true, nil
	case h.since.IsZero():
		h.since, h.gap = now, scanGap
	case now.Sub(h.since) >= holdWait:
		h.free, h.held = true, pids
	default:
		h.gap = min(2*h.gap, maxScanGap)
	}
	h.next = time.Now().Add(h.gap)
	return false
}

func (c *carrier) took(late []byte) {
	c.prevUsed += int64(len(late))
	c.carried += int64(len(late))
	c.carriedLines += bytes.Count(late, []byte{'\n'})
	if late[len(late)-1] != '\n' {
		c.carriedLines++
	}
}

// pending returns the bytes of prev not yet carried: whole lines only,
// unless final (the writer has moved on), when a torn last line is taken as
// it is.
func (c *carrier) pending(final bool) ([]byte, error) {
	n, err := size(c.prev)
	if err != nil {
		return nil, err
	}
	if n <= c.prevUsed {
		return nil, nil
	}
	buf := make([]byte, n-c.prevUsed)
	if _, err := c.prev.ReadAt(buf, c.prevUsed); err != nil && err != io.EOF {
		return nil, err
	}
	if !final {
		i := bytes.LastIndexByte(buf, '\n')
		buf = buf[:i+1]
	}
	return buf, nil
}

// rebuild writes a new live file: our part of cur, then everything still
// pending in prev, then the other whole lines of cur (without the
// misplaced copy of ours at [skipAt, skipAt+skipLen) when skipAt ≥ 0), and
// renames it into place. The old live file becomes prev for the next round
// (whatever reaches it late, or was left of it, is carried over in turn).
func (c *carrier) rebuild(skipAt, skipLen int64) error {
	c.rounds++
	curEnd, err := size(c.cur)
	if err != nil {
		return err
	}
	other := c.curBase
	if skipAt >= 0 {
		other = skipAt + skipLen
	}
	// A line still being written to the live file (Linux makes a write
	// that crosses a page boundary visible page by page) stays there, to
	// be carried whole once complete: copied in part, its rest would be
	// carried after whatever the writer appends next once the rounds have
	// run out, tearing both lines.
	nl, err := transcript.LastNewline(c.cur, other, curEnd)
	if err != nil {
		return err
	}
	curEnd = max(other, nl+1)
	// Everything in prev is final now: the live file has bytes of the
	// writer that came after them.
	late, err := c.pending(true)
	if err != nil {
		return err
	}
	next, err := safefile.CreateTemp(c.path, c.mode.Mode().Perm())
	if err != nil {
		return err
	}
	name := next.Name()
	defer safefile.Forget(name)
	fail := func(err error) error {
		next.Close()
		os.Remove(name)
		return err
	}
	if err := c.writeNext(next, late, skipAt, other, curEnd); err != nil {
		return fail(err)
	}
	// Measured before the rename: from then on writers append to next, and
	// their bytes are not ours (counted as ours, a late line would go after
	// them, or the rest of a half-copied line would).
	end, err := size(next)
	if err != nil {
		return fail(err)
	}
	if err := os.Rename(name, c.path); err != nil {
		return fail(err)
	}
	if afterRebuild != nil {
		afterRebuild()
	}
	safefile.SyncDir(filepath.Dir(c.path))
	if len(late) > 0 {
		c.took(late)
	}
	if c.prev != c.first {
		c.prev.Close()
	}
	c.prev, c.prevUsed = c.cur, curEnd
	c.cur, c.curBase = next, end
	// A new file to watch: its holders get the whole hold wait, however
	// long the last one's took.
	c.watch = holdWatch{}
	return nil
}

// writeNext writes rebuild's new live file: our part of cur, the late
// lines of prev, then cur's other lines up to curEnd (when skipAt >= 0,
// those before the misplaced copy of ours at skipAt and those from other,
// after it); with the original's mode and owner, synced.
func (c *carrier) writeNext(next *os.File, late []byte, skipAt, other, curEnd int64) error {
	if err := copyRange(next, c.cur, 0, c.curBase); err != nil {
		return err
	}
	if _, err := next.Write(late); err != nil {
		return err
	}
	if skipAt >= 0 {
		if err := copyRange(next, c.cur, c.curBase, skipAt); err != nil {
			return err
		}
	}
	if err := copyRange(next, c.cur, other, curEnd); err != nil {
		return err
	}
	return writeAll(next, nil, c.mode)
}

func size(f *os.File) (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// appendAt appends b to f with O_APPEND semantics and returns the file
// offset after the write, so the caller knows where the bytes landed.
func appendAt(f *os.File, b []byte) (int64, error) {
	fd := int(f.Fd())
	flags, _, e := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_GETFL, 0)
	if e != 0 {
		return 0, e
	}
	if flags&syscall.O_APPEND == 0 {
		if _, _, e := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_SETFL, flags|syscall.O_APPEND); e != 0 {
			return 0, e
		}
	}
	if _, err := f.Write(b); err != nil {
		return 0, err
	}
	return f.Seek(0, io.SeekCurrent)
}

func copyRange(dst io.Writer, src *os.File, from, to int64) error {
	if to <= from {
		return nil
	}
	_, err := io.Copy(dst, io.NewSectionReader(src, from, to-from))
	return err
}

func copyFile(src, dst string, perm os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		os.Remove(dst)
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
