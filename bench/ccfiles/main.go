// Command ccfiles lays out a Claude Code config directory of real sessions
// replicated to a target size, for bench/ccusage.sh: each copy of each
// source file gets fresh ids (every UUID, and every msg_/req_/toolu_ id,
// rewritten the same way within a copy, so parent links and tool pairs
// still match), so no reader can deduplicate one copy against another.
//
//	go run ./bench/ccfiles -src ../shared/fixtures/wild/claude-code -size 1GB -o /tmp/cc
//
// It writes OUT/projects/-bench-pNN/<uuid>.jsonl (20 projects) and prints
// the files and bytes written. The sources are read, never copied as they
// are: the output belongs under /tmp, never in the repository.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

var (
	uuidRE = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	apiRE  = regexp.MustCompile(`"(msg|req|toolu)_[A-Za-z0-9]{6}`)
)

func main() {
	src := flag.String("src", "../shared/fixtures/wild/claude-code", "directory of Claude Code .jsonl sessions")
	size := flag.String("size", "1GB", "total size to write, e.g. 100MB, 1GB")
	out := flag.String("o", "", "output config directory (projects/ is made in it)")
	flag.Parse()
	if *out == "" {
		fail("ccfiles: -o is required")
	}
	target, err := parseSize(*size)
	if err != nil {
		fail("ccfiles: -size: %v", err)
	}
	names, _ := filepath.Glob(filepath.Join(*src, "*.jsonl"))
	sort.Strings(names)
	if len(names) == 0 {
		fail("ccfiles: no .jsonl files in %s (the wild fixtures are in ../shared/fixtures/wild/claude-code)", *src)
	}
	srcs := make([]source, len(names))
	for i, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			fail("ccfiles: %v", err)
		}
		srcs[i] = source{b: b, uuids: uuidRE.FindAllIndex(b, -1), apis: apiRE.FindAllIndex(b, -1)}
	}
	var written int64
	files := 0
	for k := 1; written < target; k++ {
		for i, src := range srcs {
			if written >= target {
				break
			}
			data := src.fresh(k)
			name := uuidRE.FindString(string(data))
			if name == "" {
				name = fmt.Sprintf("copy-%d-%d", k, i)
			}
			dir := filepath.Join(*out, "projects", fmt.Sprintf("-bench-p%02d", k%20))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				fail("ccfiles: %v", err)
			}
			p := filepath.Join(dir, fmt.Sprintf("%s-%d.jsonl", name, i))
			if err := writeFile(p, data); err != nil {
				fail("ccfiles: %v", err)
			}
			written += int64(len(data))
			files++
		}
	}
	fmt.Printf("%d files, %d bytes in %s\n", files, written, *out)
}

// source is a session file and where its ids are.
type source struct {
	b           []byte
	uuids, apis [][]int // FindAllIndex of uuidRE, apiRE
}

// fresh is the file with every id made unique to copy k, lengths kept:
// the first eight hex digits of a UUID are XORed with k, the six
// characters after a msg_/req_/toolu_ prefix replaced by k in base 36.
func (s source) fresh(k int) []byte {
	b := append([]byte(nil), s.b...)
	for _, m := range s.uuids {
		v, _ := strconv.ParseUint(string(b[m[0]:m[0]+8]), 16, 32)
		copy(b[m[0]:], fmt.Sprintf("%08x", uint32(v)^uint32(k)))
	}
	tag := strings.Repeat("0", 6) + strconv.FormatInt(int64(k), 36)
	tag = tag[len(tag)-6:]
	for _, m := range s.apis {
		copy(b[m[1]-6:], tag)
	}
	return b
}

func writeFile(p string, b []byte) error {
	f, err := os.Create(p)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	if _, err := w.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func parseSize(s string) (int64, error) {
	mult := int64(1)
	for _, u := range []struct {
		suf string
		m   int64
	}{{"GB", 1 << 30}, {"MB", 1 << 20}, {"KB", 1 << 10}} {
		if strings.HasSuffix(s, u.suf) {
			s, mult = strings.TrimSuffix(s, u.suf), u.m
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%q is not a size like 1GB", s)
	}
	return n * mult, nil
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(1)
}
