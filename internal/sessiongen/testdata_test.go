package sessiongen

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/internal/testkit"
)

// TestCommittedTestdataIsCurrent regenerates every testdata preset and
// compares it with the committed file and with the numbers in
// testdata/README.md. Fix a failure with `go generate ./internal/sessiongen`
// (and update the README table from pi-check).
func TestCommittedTestdataIsCurrent(t *testing.T) {
	root := moduleRoot(t)
	readme := testkit.ReadFile(t, filepath.Join(root, "testdata", "README.md"))
	rows := map[string][]string{}
	for _, l := range strings.Split(string(readme), "\n") {
		if !strings.HasPrefix(l, "| `") {
			continue
		}
		cells := strings.Split(strings.Trim(l, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		rows[strings.Trim(cells[0], "`")] = cells[1:]
	}
	for _, p := range Presets() {
		if p.File == "" {
			continue
		}
		t.Run(p.Name, func(t *testing.T) {
			var buf bytes.Buffer
			res, err := Generate(&buf, p.Options)
			if err != nil {
				t.Fatal(err)
			}
			committed, err := os.ReadFile(filepath.Join(root, "testdata", p.File))
			if err != nil {
				t.Fatalf("%v (run go generate ./internal/sessiongen)", err)
			}
			if !bytes.Equal(committed, buf.Bytes()) {
				t.Fatalf("testdata/%s differs from preset %s: run go generate ./internal/sessiongen", p.File, p.Name)
			}
			if res.Bytes >= 300<<10 {
				t.Errorf("testdata/%s is %d bytes; keep samples under 300 KB", p.File, res.Bytes)
			}
			row := rows[p.File]
			if len(row) != 11 {
				t.Fatalf("testdata/README.md has no table row for %s", p.File)
			}
			mal := "—"
			if len(res.MalformedLines) > 0 {
				var s []string
				for _, n := range res.MalformedLines {
					s = append(s, strconv.Itoa(n))
				}
				mal = strings.Join(s, ", ")
			}
			c := res.Context
			want := []string{strconv.FormatInt(res.Bytes, 10), strconv.Itoa(res.LineCount), strconv.Itoa(res.Version),
				strconv.Itoa(res.Entries), mal, strconv.Itoa(c.Messages), strconv.Itoa(c.HeuristicTokens),
				strconv.Itoa(c.UsageTokens), strconv.Itoa(c.OrphanToolCalls), strconv.Itoa(res.Compactions), strconv.Itoa(c.TrueTokens)}
			if strings.Join(row, "|") != strings.Join(want, "|") {
				t.Errorf("README row for %s:\n have %v\n want %v", p.File, row, want)
			}
		})
	}
}
