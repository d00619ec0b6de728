package prune

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/ctxtool/ctxtool/pkg/internal/lazyre"
	"github.com/ctxtool/ctxtool/pkg/safefile"
	"github.com/ctxtool/ctxtool/pkg/sources"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// Inline images (pi and OpenClaw store screenshots and read images as
// base64 in the JSONL, the same image often in many sessions) are the bulk
// of many transcripts. With dedupe, an archived pi/OpenClaw session keeps a
// reference in place of each large base64 payload, and the payload goes,
// once, to a content-addressed store: <store>/<sha256 of the payload>.
// The reference is a string in the same JSON field, so the session still
// loads in pi as it did (same entries, same tree); Rehydrate puts the
// payloads back byte for byte, which Archive checks (sha256) before it
// writes anything.

// BlobDir is the image store's directory, beside the archives it serves.
const BlobDir = "ctxtool-blobs"

// BlobStore is the image store of a session's archive: one per agent
// store (pi's sessions directory, each OpenClaw agent's sessions
// directory), so that the same screenshot in many projects is kept once,
// or <archiveDir>/ctxtool-blobs for all.
func BlobStore(session, archiveDir string) string {
	if archiveDir != "" {
		return filepath.Join(archiveDir, BlobDir)
	}
	return filepath.Join(sources.Root(session), BlobDir)
}

// blobRef starts a reference: "data":"ctxtool-blob:sha256:<64 hex>".
const blobRef = "ctxtool-blob:sha256:"

// MinBlobBytes is the smallest payload moved to the store: below it the
// reference and the store's file cost more than they save.
const MinBlobBytes = 1000

var (
	payload   = lazyre.New(`"data":"([A-Za-z0-9+/]{1000,}={0,2})"`)
	reference = lazyre.New(`"data":"` + blobRef + `([0-9a-f]{64})"`)
)

// dedupeLimit bounds the sessions deduplicated in memory; larger ones are
// archived without dedupe (and the report says so).
var dedupeLimit int64 = 1 << 30

// Dehydrate replaces each base64 payload of at least MinBlobBytes in data
// (a "data" field: pi's image blocks) by a reference and returns the
// payloads by sha256. A session that already holds the reference marker
// is refused: its round trip would not be exact.
func Dehydrate(data []byte) (out []byte, blobs map[string][]byte, err error) {
	if bytes.Contains(data, []byte(blobRef)) {
		return nil, nil, errors.New("the session already contains " + blobRef + " strings: not deduplicated (the round trip would not be exact)")
	}
	blobs = map[string][]byte{}
	out = payload().ReplaceAllFunc(data, func(m []byte) []byte {
		b := m[len(`"data":"`) : len(m)-1]
		s := sha256.Sum256(b)
		h := hex.EncodeToString(s[:])
		if _, ok := blobs[h]; !ok {
			blobs[h] = append([]byte(nil), b...)
		}
		return []byte(`"data":"` + blobRef + h + `"`)
	})
	return out, blobs, nil
}

// Rehydrate puts back the payloads of the references in data from store.
func Rehydrate(data []byte, store string) ([]byte, error) {
	var err error
	cache := map[string][]byte{}
	out := reference().ReplaceAllFunc(data, func(m []byte) []byte {
		h := string(m[len(`"data":"`+blobRef) : len(m)-1])
		b, ok := cache[h]
		if !ok {
			var rerr error
			b, rerr = readBlob(store, h)
			if rerr != nil && err == nil {
				err = rerr
			}
			cache[h] = b
		}
		return append(append([]byte(`"data":"`), b...), '"')
	})
	return out, err
}

func readBlob(store, h string) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(store, h))
	if err != nil {
		return nil, fmt.Errorf("image store %s: %w (the archive's images are there: restore the directory)", store, safefile.PathCause(err))
	}
	if s := sha256.Sum256(b); hex.EncodeToString(s[:]) != h {
		return nil, fmt.Errorf("image store %s: %s is damaged (its sha256 differs)", store, h)
	}
	return b, nil
}

// putBlobs writes the payloads the store lacks (temp, fsync, rename) and
// returns the bytes it added. A payload already there is checked, not
// rewritten; a damaged one is replaced.
func putBlobs(store string, blobs map[string][]byte) (int64, error) {
	if err := os.MkdirAll(store, 0o755); err != nil {
		return 0, fmt.Errorf("image store %s: %w", store, safefile.PathCause(err))
	}
	safefile.SweepOnce(store)
	var added int64
	for h, b := range blobs {
		p := filepath.Join(store, h)
		if _, err := readBlob(store, h); err == nil {
			continue
		} else if _, serr := os.Stat(p); serr != nil && !errors.Is(serr, fs.ErrNotExist) {
			return added, serr
		}
		if err := safefile.WriteFile(p, b, 0o644); err != nil {
			return added, fmt.Errorf("image store %s: %w", store, err)
		}
		added += int64(len(b))
	}
	return added, nil
}

// dehydrated is a session read for dedupe.
type dehydrated struct {
	data     []byte // with references
	size     int64  // bytes read of the original
	sum      string // sha256 of data
	replaced int64  // payload bytes replaced by references
	added    int64  // bytes added to the store
}

// dehydrate reads size bytes of a session from r and deduplicates them
// into store, checking the round trip first. It returns nil (and reads
// everything, so the caller's hash stays whole) when there is nothing to
// deduplicate.
func dehydrate(r io.Reader, size int64, store string) (*dehydrated, error) {
	data := make([]byte, size)
	n, err := io.ReadFull(r, data)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, err
	}
	data = data[:n]
	out, blobs, err := Dehydrate(data)
	if err != nil || len(blobs) == 0 {
		return &dehydrated{data: data, size: int64(n), sum: sum256(data)}, nil
	}
	// The round trip, before anything is written.
	back := reference().ReplaceAllFunc(out, func(m []byte) []byte {
		b := blobs[string(m[len(`"data":"`+blobRef):len(m)-1])]
		return append(append([]byte(`"data":"`), b...), '"')
	})
	if !bytes.Equal(back, data) {
		return nil, errors.New("dedupe round trip differs from the original: not archived")
	}
	added, err := putBlobs(store, blobs)
	if err != nil {
		return nil, err
	}
	return &dehydrated{data: out, size: int64(n), sum: sum256(out), replaced: int64(len(data) - len(out)), added: added}, nil
}

func sum256(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// loadsAlike checks that the session in archive loads as the original
// does: the same entries, lines and malformed lines (pi's loader keeps a
// reference like any string).
func loadsAlike(original, archive string) error {
	a, err := transcript.Load(original)
	if err != nil {
		return err
	}
	b, err := transcript.Load(archive)
	if err != nil {
		return err
	}
	if len(a.Entries) != len(b.Entries) || a.Lines != b.Lines || len(a.Malformed) != len(b.Malformed) {
		return fmt.Errorf("%d entries, %d lines, %d malformed instead of %d, %d, %d",
			len(b.Entries), b.Lines, len(b.Malformed), len(a.Entries), a.Lines, len(a.Malformed))
	}
	return nil
}
