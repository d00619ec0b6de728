package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ctxtool/ctxtool/internal/testkit/prunehome"
	"github.com/ctxtool/ctxtool/pkg/estimate"
)

// chromium is the headless browser of the report test: Debian's
// chromium package (.ci/run installs it). Absent, the test skips, except
// under CI=true.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is needed for the report test under CI=true (.ci/run installs Debian's chromium)")
	}
	t.Skip("no chromium: install Debian's chromium package to render the report in a real browser")
	return ""
}

// runChromium runs headless chromium with a fresh profile and no network
// services, returning stdout.
func runChromium(t *testing.T, bin string, args ...string) []byte {
	t.Helper()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--user-data-dir=" + t.TempDir()}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, bin, append(base, args...)...)
	var stderr bytes.Buffer
	c.Stderr = &stderr
	out, err := c.Output()
	if err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, stderr.String())
	}
	return out
}

var (
	attrRow  = regexp.MustCompile(`<tr class="(part|msg)"(?: id="L\d+")? data-(?:part|line)="([^"]*)" data-tokens="(\d+)"`)
	bodyAttr = regexp.MustCompile(`<body[^>]*>`)
)

// The report of a generated session with a compaction and images, loaded
// in a real headless Chromium: the page's figures are estimate's
// (--per-message --json), its check script ran, and a screenshot is taken.
func TestReportInChromium(t *testing.T) {
	bin := chromium(t)
	h := discoveryHome(t)
	var file string
	for _, s := range h.Sessions {
		if s.Agent == "pi" && s.Kind == prunehome.Archived && strings.Contains(s.Path, "_a2") {
			file = s.Path
		}
	}
	if file == "" {
		t.Fatal("no generated pi session")
	}
	page := filepath.Join(t.TempDir(), "report.html")
	runOK(t, "report", "--tokenizer", "heuristic", "--top", "5", file, "-o", page)
	html, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	for _, external := range []string{"http://", "https://", "<link", "src="} {
		if bytes.Contains(html, []byte(external)) {
			t.Errorf("the page refers to something outside it: %q", external)
		}
	}
	out, _ := runOK(t, "estimate", "--json", "--per-message", "--tokenizer", "heuristic", file)
	var est EstimateReport
	if err := json.Unmarshal([]byte(out), &est); err != nil {
		t.Fatal(err)
	}

	dom := string(runChromium(t, bin, "--dump-dom", "file://"+page))
	body := bodyAttr.FindString(dom)
	if !strings.Contains(body, `data-rendered="yes"`) {
		t.Fatalf("the page's script did not run in Chromium: %s", body)
	}
	if want := `data-parts-sum="` + strconv.Itoa(est.Tokens) + `"`; !strings.Contains(body, want) {
		t.Errorf("parts do not add up to estimate's %d tokens: %s", est.Tokens, body)
	}
	if !strings.Contains(dom, `id="total" data-tokens="`+strconv.Itoa(est.Tokens)+`"`) {
		t.Errorf("total is not estimate's %d", est.Tokens)
	}
	// Per role: the parts of each role add up to estimate's byRole.
	roleOf := func(part string) string {
		switch {
		case strings.HasPrefix(part, "tool output"):
			return "toolResult"
		case part == "summary":
			return "compactionSummary"
		}
		return part
	}
	byRole := map[string]int{}
	var msgs [][2]int
	images := 0
	for _, m := range attrRow.FindAllStringSubmatch(dom, -1) {
		n, _ := strconv.Atoi(m[3])
		if m[1] == "part" {
			if m[2] == "images" {
				images += n
			} else if m[2] != "system and tools" {
				byRole[roleOf(m[2])] += n
			}
			continue
		}
		line, _ := strconv.Atoi(m[2])
		msgs = append(msgs, [2]int{line, n})
	}
	sumRoles := 0
	for role, n := range est.ByRole {
		sumRoles += n
		if byRole[role] > n || (images == 0 && byRole[role] != n) {
			t.Errorf("role %s: page %d, estimate %d (images %d)", role, byRole[role], n, images)
		}
	}
	pageSum := images
	for _, n := range byRole {
		pageSum += n
	}
	if pageSum != sumRoles {
		t.Errorf("page's message parts %d ≠ estimate's byRole total %d", pageSum, sumRoles)
	}
	// The biggest messages: estimate's five largest, line and tokens.
	want := slices.Clone(est.Messages)
	slices.SortStableFunc(want, func(a, b estimate.MessageTokens) int { return b.Tokens - a.Tokens })
	if len(msgs) != 5 {
		t.Fatalf("page lists %d biggest messages, want 5", len(msgs))
	}
	for i, m := range msgs {
		if m[0] != want[i].Line || m[1] != want[i].Tokens {
			t.Errorf("biggest #%d: page line %d %d tokens, estimate line %d %d tokens", i+1, m[0], m[1], want[i].Line, want[i].Tokens)
		}
	}
	if got := strings.Count(dom, `class="compaction"`); got != est.Compactions || got == 0 {
		t.Errorf("page marks %d compactions, estimate counts %d", got, est.Compactions)
	}

	shot := filepath.Join(t.TempDir(), "report.png")
	runChromium(t, bin, "--hide-scrollbars", "--window-size=840,1100", "--screenshot="+shot, "file://"+page)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if b := img.Bounds(); b.Dx() < 800 || b.Dy() < 1000 {
		t.Errorf("screenshot %v", b)
	}
	if dst := os.Getenv("CTXTOOL_REPORT_SCREENSHOT"); dst != "" {
		data, _ := os.ReadFile(shot)
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
