package filelock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/ctxtool/ctxtool/pkg/safefile"
)

// OpenClaw's session-store lock (src/config/sessions/store.ts,
// withSessionStoreLock): a holder keeps it for one read-modify-write of
// sessions.json, so it goes stale much sooner than a transcript lock.
const (
	StoreStaleAge = 30 * time.Second
	StoreWait     = 10 * time.Second
	storeLockPoll = 25 * time.Millisecond
)

// AcquireStore takes the lock OpenClaw serialises writers of a session
// store with: <store>.lock created exclusively, holding {"pid", "startedAt"
// (epoch ms)} plus "createdAt" for ctxtool's own transcript-lock reader.
// Another holder's lock is taken over when its file is older than 30 s (as
// OpenClaw does) or its pid is gone. It polls every 25 ms until wait
// (StoreWait when ≤ 0), then fails with a LockedError.
func AcquireStore(ctx context.Context, store string, wait time.Duration) (*Lock, error) {
	if wait <= 0 {
		wait = StoreWait
	}
	path := store + ".lock"
	deadline := time.Now().Add(wait)
	for {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err == nil {
			now := time.Now()
			data, _ := json.Marshal(map[string]any{"pid": os.Getpid(), "startedAt": now.UnixMilli(),
				"createdAt": now.UTC().Format("2006-01-02T15:04:05.000Z")})
			if _, err := f.Write(data); err != nil {
				f.Close()
				os.Remove(path)
				return nil, fmt.Errorf("%s: write lock: %w", path, err)
			}
			l, err := own(path, f)
			if err != nil || l != nil {
				return l, err
			}
			continue // replaced under us (taken over as stale): look again
		}
		if !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("%s: cannot create lock: %w (is the directory writable?)", path, safefile.PathCause(err))
		}
		pid, stale := inspectStoreLock(path)
		if stale {
			os.Remove(path)
			continue
		}
		if time.Now().After(deadline) {
			return nil, &LockedError{Session: store, LockPath: path, PID: pid, CreatedAt: "less than 30 s ago"}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(storeLockPoll):
		}
	}
}

// inspectStoreLock: stale when older than 30 s or its pid is dead.
func inspectStoreLock(path string) (pid int, stale bool) {
	st, err := os.Stat(path)
	if err != nil {
		return 0, errors.Is(err, os.ErrNotExist)
	}
	if time.Since(st.ModTime()) > StoreStaleAge {
		return 0, true
	}
	var p struct {
		PID int `json:"pid"`
	}
	if data, err := os.ReadFile(path); err == nil && json.Unmarshal(data, &p) == nil && p.PID > 0 {
		return p.PID, !safefile.PidAlive(p.PID)
	}
	return 0, false
}
