package prune

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/ctxtool/ctxtool/pkg/filelock"
	"github.com/ctxtool/ctxtool/pkg/safefile"
)

// Unarchive restores the session an archive holds to the path it was
// archived from, byte for byte (sha256 checked) with its mode and mtime,
// and removes the archive. to, when set, restores it there instead. It
// never replaces a file: when the original path holds the same bytes
// already (a run killed after restoring) the archive just goes; when it
// holds others, it refuses.
func Unarchive(ctx context.Context, archive, to string) (*Info, error) {
	info, ok, err := ReadInfo(archive)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", archive, safefile.PathCause(err))
	}
	if !ok {
		return nil, fmt.Errorf("%s: not an archive ctxtool prune wrote (no ctxtool footer); decompress it with `zstd -d` if it is zstd", archive)
	}
	target := info.Original
	if to != "" {
		target = to
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return nil, fmt.Errorf("%s: %w", target, safefile.PathCause(err))
	}
	lock, err := filelock.Acquire(ctx, target, 0)
	if err != nil {
		return nil, err
	}
	defer lock.Release()
	safefile.SweepOnce(filepath.Dir(target))
	if _, err := os.Lstat(target); err == nil {
		sum, n, err := prefixSum(target, info.Size+1)
		if err != nil {
			return nil, err
		}
		if n != info.Size || sum != info.SHA256 {
			return nil, fmt.Errorf("%s: exists and differs from the archived session (sha256 %s): move it away, or restore elsewhere with --to", target, info.SHA256)
		}
		return info, removeArchive(archive)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	tmp, fail, err := tempFor(target, info.Mode.Perm()|0o200)
	if err != nil {
		return nil, err
	}
	name := tmp.Name()
	defer safefile.Forget(name)
	var sum string
	var n int64
	if info.Blobs != "" {
		data, err := restored(archive, info)
		if err != nil {
			return fail(fmt.Errorf("%s: %w; nothing restored", archive, err))
		}
		if _, err := tmp.Write(data); err != nil {
			return fail(err)
		}
		sum, n = info.SHA256, int64(len(data))
	} else if sum, n, err = decompressTo(archive, tmp); err != nil {
		return fail(fmt.Errorf("%s: %w", archive, err))
	}
	if n != info.Size || sum != info.SHA256 {
		return fail(fmt.Errorf("%s: decompresses to %d bytes with sha256 %s, but the session archived had %d bytes with sha256 %s: the archive is damaged; nothing restored", archive, n, sum, info.Size, info.SHA256))
	}
	if err := tmp.Chmod(info.Mode.Perm()); err != nil {
		return fail(err)
	}
	if err := tmp.Sync(); err != nil {
		return fail(err)
	}
	if err := tmp.Close(); err != nil {
		return fail(err)
	}
	if err := os.Chtimes(name, info.ModTime, info.ModTime); err != nil {
		return fail(err)
	}
	safefile.CrashPoint("unarchive-temp-written")
	if err := os.Link(name, target); err != nil {
		return fail(fmt.Errorf("%s: %w", target, safefile.PathCause(err)))
	}
	os.Remove(name)
	safefile.SyncDir(filepath.Dir(target))
	safefile.CrashPoint("unarchive-linked")
	return info, removeArchive(archive)
}

func removeArchive(archive string) error {
	if err := os.Remove(archive); err != nil {
		return fmt.Errorf("%s: restored, but the archive could not be removed: %w", archive, safefile.PathCause(err))
	}
	safefile.SyncDir(filepath.Dir(archive))
	return nil
}
