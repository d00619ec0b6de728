package checkpoint

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/klauspost/compress/zstd"

	"github.com/ctxtool/ctxtool/pkg/formats"
	"github.com/ctxtool/ctxtool/pkg/internal/lazyre"
	"github.com/ctxtool/ctxtool/pkg/sessionstore"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// maxDirName bounds a sanitized key; longer keys keep a prefix plus a hash
// so that two long keys sharing a prefix still get different directories.
const maxDirName = 100

var unsafeKeyChar = lazyre.New(`[^a-zA-Z0-9._-]`)

// windowsReserved are device names Windows refuses as a file or directory
// name, with or without an extension.
var windowsReserved = map[string]bool{"CON": true, "PRN": true, "AUX": true, "NUL": true}

func init() {
	for i := 0; i <= 9; i++ {
		windowsReserved["COM"+strconv.Itoa(i)] = true
		windowsReserved["LPT"+strconv.Itoa(i)] = true
	}
}

// SanitizeKey maps a session key to one directory name. It is OpenClaw's
// sanitizeSessionKeyForPath (every character outside [a-zA-Z0-9._-] becomes
// "_", so "telegram:user123" → "telegram_user123", and separators, NUL and
// drive letters can never survive) plus what that regex leaves open: names
// made only of dots ("." and ".." would escape the directory), Windows
// device names and trailing dots, empty keys and very long keys.
func SanitizeKey(key string) string {
	s := unsafeKeyChar().ReplaceAllString(key, "_")
	if strings.Trim(s, ".") == "" {
		s = strings.ReplaceAll(s, ".", "_")
	}
	if s == "" {
		s = "_"
	}
	if strings.HasSuffix(s, ".") {
		s = strings.TrimRight(s, ".") + "_"
	}
	base, _, _ := strings.Cut(s, ".")
	if windowsReserved[strings.ToUpper(base)] {
		s = "_" + s
	}
	if len(s) > maxDirName {
		sum := sha256.Sum256([]byte(key))
		s = s[:maxDirName-17] + "_" + hex.EncodeToString(sum[:8])
	}
	return s
}

// KeyFromFile derives the default session key of a transcript: the
// session's own identity, never just its file name (x/session.jsonl and
// y/session.jsonl are different sessions). For an OpenClaw transcript whose
// directory has a sessions.json naming it, that store's key (e.g.
// "agent:main:main", which stays with the conversation across resets);
// otherwise the session header's id (pi's session UUID); for a file with
// no header id, the file name plus a hash of its absolute path.
//
// One identity per session whatever its form: a session of an OpenClaw
// store ("store.sqlite#agent:main:main") is its store key; X.jsonl.zst is
// X.jsonl (its decompressed header, the name without .zst).
func KeyFromFile(path string) string {
	return keyFromFile(path, readStore(filepath.Dir(path)), headerID(path))
}

// headerID is the pi header id of path, decompressed when it is a .zst.
func headerID(path string) string {
	if _, _, ok := formats.SplitStorePath(path); ok {
		return ""
	}
	if !strings.HasSuffix(path, ".zst") {
		h, _ := transcript.ReadHeader(path)
		return h.ID
	}
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	dec, err := zstd.NewReader(f, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
	if err != nil {
		return ""
	}
	defer dec.Close()
	h, _ := transcript.ReadHeaderFrom(path, dec)
	return h.ID
}

// keyFromFile is KeyFromFile with the directory's sessions.json and the
// header id already read (Take has both).
func keyFromFile(path string, st *sessionstore.Store, headerID string) string {
	if _, key, ok := formats.SplitStorePath(path); ok && key != "" {
		return key // OpenClaw's own key for the session
	}
	path = strings.TrimSuffix(path, ".zst") // the session, whatever its form
	if k := st.KeyFor(path); k != "" {
		return k
	}
	if headerID != "" {
		return headerID
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	sum := sha256.Sum256([]byte(abs))
	return sessionstore.Stem(filepath.Base(path)) + "-" + hex.EncodeToString(sum[:4])
}

// openclawKey is the sessions.json key naming the file, "" when none does.
func openclawKey(path string) string {
	return readStore(filepath.Dir(path)).KeyFor(path)
}

// readStore reads the sessions.json of dir; an unreadable store counts as
// none (the key then falls back to the file name).
func readStore(dir string) *sessionstore.Store {
	st, err := sessionstore.Read(dir)
	if err != nil {
		return nil
	}
	return st
}

var idRE = lazyre.New(`^cp_([0-9]{3,9})$`)

// ValidID reports whether id has the form of a checkpoint id (cp_NNN, 3 to
// 9 digits): the one rule for file names, _latest.json, meta.checkpoint_id
// and restore --id.
func ValidID(id string) bool { return idRE().MatchString(id) }

// idNumber returns N of "cp_NNN", or -1.
func idNumber(id string) int {
	m := idRE().FindStringSubmatch(id)
	if m == nil {
		return -1
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// formatID is the checkpoint id of number n: cp_001, cp_002, … cp_1000.
func formatID(n int) string { return fmt.Sprintf("cp_%03d", n) }

// channelAndAgent derives meta.channel and meta.agent_id from a session key
// the way OpenClaw builds them: "agent:<agentId>:<channel>:…", or a plain
// "<channel>:<peer>" key. Keys without a colon have no channel.
func channelAndAgent(key, sessionFile string) (channel, agent string) {
	agent = "default"
	parts := strings.Split(key, ":")
	if len(parts) >= 3 && parts[0] == "agent" && parts[1] != "" {
		agent = parts[1]
		parts = parts[2:]
		if len(parts) == 1 {
			parts = nil // "agent:main:main" is the agent's main session, no channel
		}
	} else if a := agentFromPath(sessionFile); a != "" {
		agent = a
	}
	if len(parts) >= 2 && parts[0] != "" {
		channel = parts[0]
	}
	return channel, agent
}

// agentFromPath reads <agentId> from an OpenClaw .../agents/<agentId>/sessions/x.jsonl path.
func agentFromPath(p string) string {
	dir := filepath.Dir(p)
	if filepath.Base(dir) != "sessions" {
		return ""
	}
	parent := filepath.Dir(dir)
	if filepath.Base(filepath.Dir(parent)) != "agents" {
		return ""
	}
	return filepath.Base(parent)
}
