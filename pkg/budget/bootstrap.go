package budget

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"unicode"

	"github.com/ctxtool/ctxtool/pkg/safefile"
	"github.com/ctxtool/ctxtool/pkg/transcript"
)

// bootstrapFileNames are the workspace files OpenClaw injects into the
// system prompt, in its order (loadWorkspaceBootstrapFiles); MEMORY.md (or
// memory.md) follows when present.
var bootstrapFileNames = []string{"AGENTS.md", "SOUL.md", "TOOLS.md", "IDENTITY.md", "USER.md", "HEARTBEAT.md", "BOOTSTRAP.md"}

// memoryFileNames are tried after the fixed files; absent ones are skipped
// (not marked missing) and a memory.md that is the same file as MEMORY.md
// (case-insensitive file systems) is read once.
var memoryFileNames = []string{"MEMORY.md", "memory.md"}

// OpenClaw's bootstrap limits (pi-embedded-helpers/bootstrap.ts).
const (
	// DefaultBootstrapTotalMaxChars caps all injected files together.
	DefaultBootstrapTotalMaxChars = 150_000
	// minFileBudgetChars: below this many remaining characters no further
	// file is injected.
	minFileBudgetChars = 64
	headRatio          = 0.7
	tailRatio          = 0.2
)

// WorkspaceFile is a bootstrap file as read from the workspace.
type WorkspaceFile struct {
	Name    string
	Path    string
	Missing bool
	Content string
}

// LoadWorkspace reads the bootstrap files of an OpenClaw workspace the way
// OpenClaw does: the fixed files in order (absent ones kept as missing:
// OpenClaw injects a "[MISSING]" line for them), then MEMORY.md/memory.md
// when present. It also lists memory/*.md, the daily notes that OpenClaw's
// memory search reads but never injects.
func LoadWorkspace(dir string) (files []WorkspaceFile, memoryNotes []MemoryNote, err error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("workspace %s: %w (pass the agent's workspace directory, e.g. ~/.openclaw/workspace)", dir, safefile.PathCause(err))
	}
	if !st.IsDir() {
		return nil, nil, fmt.Errorf("workspace %s: not a directory (pass the agent's workspace directory)", dir)
	}
	for _, name := range bootstrapFileNames {
		f, err := readWorkspaceFile(dir, name)
		if err != nil {
			return nil, nil, err
		}
		files = append(files, f)
	}
	var memInfos []os.FileInfo
	for _, name := range memoryFileNames {
		f, err := readWorkspaceFile(dir, name)
		if err != nil {
			return nil, nil, err
		}
		if f.Missing {
			continue
		}
		info, err := os.Stat(f.Path)
		if err != nil {
			return nil, nil, fmt.Errorf("workspace file %s: %w", f.Path, safefile.PathCause(err))
		}
		if slices.ContainsFunc(memInfos, func(o os.FileInfo) bool { return os.SameFile(o, info) }) {
			continue // memory.md is MEMORY.md on a case-insensitive file system
		}
		memInfos = append(memInfos, info)
		files = append(files, f)
	}
	notes, err := listMemoryNotes(dir)
	if err != nil {
		return nil, nil, err
	}
	return files, notes, nil
}

func readWorkspaceFile(dir, name string) (WorkspaceFile, error) {
	p := filepath.Join(dir, name)
	f := WorkspaceFile{Name: name, Path: p}
	data, err := os.ReadFile(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		f.Missing = true
		return f, nil
	case err != nil:
		return f, fmt.Errorf("workspace file %s: %w (check its permissions)", p, safefile.PathCause(err))
	}
	f.Content = string(data)
	return f, nil
}

// MemoryNote is one memory/*.md file: searched by OpenClaw's memory search,
// not part of the bootstrap region.
type MemoryNote struct {
	Path  string `json:"path"`
	Chars int    `json:"chars"`
}

func listMemoryNotes(dir string) ([]MemoryNote, error) {
	matches, err := filepath.Glob(filepath.Join(dir, "memory", "*.md"))
	if err != nil {
		return nil, err
	}
	sort.Strings(matches)
	var out []MemoryNote
	for _, m := range matches {
		data, err := os.ReadFile(m)
		if err != nil {
			return nil, fmt.Errorf("memory note %s: %w", m, safefile.PathCause(err))
		}
		out = append(out, MemoryNote{Path: m, Chars: transcript.UTF16Len(string(data))})
	}
	return out, nil
}

// BootstrapFile is one injected bootstrap file and what its budget did to it.
type BootstrapFile struct {
	Name    string `json:"name"`
	Path    string `json:"path"`
	Missing bool   `json:"missing,omitempty"`
	// Chars is the file's length (trailing whitespace trimmed), in UTF-16
	// units; InjectedChars what reaches the prompt after truncation.
	Chars         int  `json:"chars"`
	InjectedChars int  `json:"injectedChars"`
	Tokens        int  `json:"tokens"`
	Truncated     bool `json:"truncated"`
	// MaxChars is the per-file limit applied to it.
	MaxChars int `json:"maxChars"`
	// Skipped: the total budget was used up before this file.
	Skipped bool   `json:"skipped,omitempty"`
	Content string `json:"-"`
}

// BuildBootstrap applies OpenClaw's per-file and total character limits
// (buildBootstrapContextFiles): a file longer than min(maxChars, what is
// left of totalMaxChars) keeps its first 70% and last 20% of that limit
// around a truncation marker; a missing file becomes a "[MISSING]" line;
// once fewer than 64 characters of the total are left, no further file is
// injected. totalMaxChars ≤ 0 means max(maxChars, 150,000), OpenClaw's
// default.
func BuildBootstrap(files []WorkspaceFile, maxChars, totalMaxChars int) []BootstrapFile {
	if totalMaxChars <= 0 {
		totalMaxChars = max(maxChars, DefaultBootstrapTotalMaxChars)
	}
	remaining := max(1, totalMaxChars)
	out := make([]BootstrapFile, 0, len(files))
	for i, f := range files {
		bf := BootstrapFile{Name: f.Name, Path: f.Path, Missing: f.Missing}
		if remaining <= 0 || (!f.Missing && remaining < minFileBudgetChars) {
			for _, rest := range files[i:] {
				out = append(out, BootstrapFile{Name: rest.Name, Path: rest.Path, Missing: rest.Missing, Skipped: true,
					Chars: transcript.UTF16Len(trimEndJS(rest.Content))})
			}
			break
		}
		if f.Missing {
			text := clampToBudget("[MISSING] Expected at: "+f.Path, remaining)
			bf.Content, bf.InjectedChars, bf.Tokens = text, transcript.UTF16Len(text), transcript.TextTokens(text)
			remaining = max(0, remaining-bf.InjectedChars)
			out = append(out, bf)
			continue
		}
		bf.MaxChars = max(1, min(maxChars, remaining))
		content, truncated, n := trimBootstrapContent(f.Content, f.Name, bf.MaxChars)
		within := clampToBudget(content, remaining)
		bf.Chars = n
		bf.Content = within
		bf.InjectedChars, bf.Tokens = transcript.UTF16Len(within), transcript.TextTokens(within)
		bf.Truncated = truncated || bf.InjectedChars < transcript.UTF16Len(content)
		remaining = max(0, remaining-bf.InjectedChars)
		out = append(out, bf)
	}
	return out
}

// trimBootstrapContent keeps head and tail of an over-long file around
// OpenClaw's marker. It returns the text, whether it was cut, and the
// length of the trimmed original.
func trimBootstrapContent(content, name string, maxChars int) (string, bool, int) {
	trimmed := trimEndJS(content)
	n := transcript.UTF16Len(trimmed)
	if n <= maxChars {
		return trimmed, false, n
	}
	headChars := int(float64(maxChars) * headRatio)
	tailChars := int(float64(maxChars) * tailRatio)
	head := transcript.PrefixUTF16(trimmed, headChars)
	tail := transcript.SuffixUTF16(trimmed, tailChars)
	marker := strings.Join([]string{
		"",
		fmt.Sprintf("[...truncated, read %s for full content...]", name),
		fmt.Sprintf("…(truncated %s: kept %d+%d chars of %d)…", name, headChars, tailChars, n),
		"",
	}, "\n")
	return strings.Join([]string{head, marker, tail}, "\n"), true, n
}

// clampToBudget cuts text to budget characters, the last one an ellipsis.
func clampToBudget(text string, budget int) string {
	if budget <= 0 {
		return ""
	}
	if transcript.UTF16Len(text) <= budget {
		return text
	}
	if budget <= 3 {
		return transcript.PrefixUTF16(text, budget)
	}
	return transcript.PrefixUTF16(text, budget-1) + "…"
}

// trimEndJS is String.prototype.trimEnd: Unicode white space, line
// terminators and the BOM.
func trimEndJS(s string) string {
	return strings.TrimRightFunc(s, func(r rune) bool { return unicode.IsSpace(r) || r == '\uFEFF' })
}

// projectContextHeading starts the bootstrap region, as in OpenClaw's
// system prompt.
const projectContextHeading = "# Project Context\n\nThe following project context files have been loaded:"

// renderBootstrap is the bootstrap region's text: the injected files, each
// under a "## <name>" heading. Skipped files are left out; "" when nothing
// is injected.
func renderBootstrap(files []BootstrapFile) string {
	var b strings.Builder
	for _, f := range files {
		if f.Skipped || f.Content == "" {
			continue
		}
		if b.Len() == 0 {
			b.WriteString(projectContextHeading)
		}
		b.WriteString("\n\n## ")
		b.WriteString(f.Name)
		b.WriteString("\n\n")
		b.WriteString(f.Content)
	}
	return b.String()
}
