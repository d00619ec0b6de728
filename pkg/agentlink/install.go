package agentlink

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/ctxtool/ctxtool/pkg/safefile"
)

//go:embed shims/pi.ts
var piShim string

// binaryMarker is replaced by the absolute path of the ctxtool binary.
const binaryMarker = "__CTXTOOL_BINARY__"

// piSignature is in every extension ctxtool writes; a file without it is
// the user's and is never overwritten or removed.
const piSignature = "// ctxtool's pi extension: pi's compactions are made by ctxtool."

// PiExtension is the pi extension for the ctxtool binary at binary (an
// absolute path): the embedded shim with the path written in.
func PiExtension(binary string) ([]byte, error) {
	if !filepath.IsAbs(binary) {
		return nil, fmt.Errorf("the ctxtool binary's path %q is not absolute", binary)
	}
	quoted, err := json.Marshal(binary) // a JSON string is a JavaScript string literal
	if err != nil {
		return nil, err
	}
	return []byte(strings.Replace(piShim, `"`+binaryMarker+`"`, string(quoted), 1)), nil
}

// PiAgentDir is pi's agent directory: $PI_CODING_AGENT_DIR (a leading ~
// expanded, as pi does), else ~/.pi/agent.
func PiAgentDir() (string, error) {
	if d := os.Getenv("PI_CODING_AGENT_DIR"); d != "" {
		if d == "~" || strings.HasPrefix(d, "~/") {
			home, err := os.UserHomeDir()
			if err != nil {
				return "", err
			}
			d = filepath.Join(home, strings.TrimPrefix(d, "~"))
		}
		return filepath.Abs(d)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no home directory to find pi's agent directory in (set PI_CODING_AGENT_DIR): %w", err)
	}
	return filepath.Join(home, ".pi", "agent"), nil
}

// PiExtensionPath is where the extension lives in pi's agent directory.
func PiExtensionPath(agentDir string) string {
	return filepath.Join(agentDir, "extensions", "ctxtool.ts")
}

// Action is what an install or uninstall did (or, dry, would do) to one
// file.
type Action struct {
	Path string `json:"path"`
	// Change is "create", "update", "remove" or "unchanged".
	Change string `json:"change"`
	// Binary is the ctxtool binary the extension runs (install).
	Binary string `json:"binary,omitempty"`
}

// InstallPi writes the extension for binary into pi's agent directory. It
// changes nothing when the file already holds exactly that extension,
// replaces an extension an earlier ctxtool wrote, and refuses to touch a
// ctxtool.ts it did not write. Nothing else in the directory is read or
// written. dry reports the action without doing it.
func InstallPi(agentDir, binary string, dry bool) (Action, error) {
	want, err := PiExtension(binary)
	if err != nil {
		return Action{}, err
	}
	path := PiExtensionPath(agentDir)
	a := Action{Path: path, Binary: binary, Change: "create"}
	have, err := os.ReadFile(path)
	switch {
	case err == nil && bytes.Equal(have, want):
		a.Change = "unchanged"
		return a, nil
	case err == nil && !bytes.Contains(have, []byte(piSignature)):
		return a, fmt.Errorf("%s exists and was not written by ctxtool: move it away (or rename it) and install again", path)
	case err == nil:
		a.Change = "update"
	case !errors.Is(err, fs.ErrNotExist):
		return a, err
	}
	if dry {
		return a, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return a, err
	}
	return a, safefile.WriteFile(path, want, 0o644)
}

// UninstallPi removes the extension ctxtool wrote; a ctxtool.ts that is
// not ctxtool's is left alone with an error.
func UninstallPi(agentDir string, dry bool) (Action, error) {
	path := PiExtensionPath(agentDir)
	a := Action{Path: path, Change: "remove"}
	have, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		a.Change = "unchanged"
		return a, nil
	}
	if err != nil {
		return a, err
	}
	if !bytes.Contains(have, []byte(piSignature)) {
		return a, fmt.Errorf("%s was not written by ctxtool: left as it is", path)
	}
	if dry {
		return a, nil
	}
	return a, os.Remove(path)
}

// InstalledBinary reads which ctxtool binary an installed extension runs
// ("" when the file is not ctxtool's extension).
func InstalledBinary(ext []byte) string {
	if !bytes.Contains(ext, []byte(piSignature)) {
		return ""
	}
	return binaryIn(ext)
}

// binaryIn reads the binary a shim's `const CTXTOOL = "…";` line names.
func binaryIn(ext []byte) string {
	for _, l := range strings.Split(string(ext), "\n") {
		if v, ok := strings.CutPrefix(l, "const CTXTOOL = "); ok {
			var s string
			if json.Unmarshal([]byte(strings.TrimSuffix(strings.TrimSpace(v), ";")), &s) == nil {
				return s
			}
		}
	}
	return ""
}
