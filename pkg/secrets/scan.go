package secrets

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
)

// The secret scan reads the raw bytes of every line (including malformed
// ones: a torn line still leaks what it holds) in one streaming pass.
// Credentials are runs of [A-Za-z0-9_-]; the pass splits the bytes into
// such runs with a table lookup per byte and looks closer only at runs
// that start like a credential, so a gigabyte costs about as much as
// reading it. Values are never printed: findings carry a masked form and
// a short fingerprint (sha256) to tell occurrences of the same secret apart.

// Hit is one credential found by Scan.
type Hit struct {
	Line, Col   int // 1-based line, 1-based UTF-16 column
	Kind        string
	Masked      string // the prefix and the length: "ghp_… (40 chars)"
	Fingerprint string // first 8 hex of sha256(value)
}

// Result is what the streaming pass found.
type Result struct {
	Err   error
	Lines int
	Hits  []Hit
}

var tokenByte [256]bool

func init() {
	for c := 'a'; c <= 'z'; c++ {
		tokenByte[c], tokenByte[c-32] = true, true
	}
	for c := '0'; c <= '9'; c++ {
		tokenByte[c] = true
	}
	tokenByte['_'], tokenByte['-'] = true, true
}

const (
	// ScanChunk is how much Scan reads at a time.
	ScanChunk = 4 << 20
	// scanAhead is how far a check may look past a run (a JWT or a
	// private-key block) and the overlap kept between chunks.
	scanAhead = 64 << 10
	// maxSecretRun: longer runs are data blobs, not credentials.
	maxSecretRun = 16 << 10
)

// Scan streams r once and returns the secrets and the line count.
func Scan(r io.Reader) Result {
	var res Result
	buf := make([]byte, 0, ScanChunk+scanAhead)
	cur := cursor{line: 1}
	skipRun := false // the previous chunk ended inside a blob run
	eof := false
	var last byte
	total := 0
	for !eof {
		n, err := io.ReadFull(r, buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		total += n
		if n > 0 {
			last = buf[len(buf)-1]
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			eof = true
		} else if err != nil {
			res.Err = err
			return res
		}
		data := buf
		limit := len(data)
		if !eof {
			limit = len(data) - scanAhead
		}
		sc := scanner{data: data, limit: limit, eof: eof, cur: &cur, res: &res}
		resume := sc.run(skipRun)
		skipRun = sc.endedInRun
		cur.advance(data, resume)
		cur.rebase(resume)
		buf = buf[:copy(buf, data[resume:])]
	}
	res.Lines = cur.line
	if total == 0 || last == '\n' {
		res.Lines-- // no line after the final newline
	}
	return res
}

// cursor tracks the line and UTF-16 column of a position in the stream.
type cursor struct {
	pos   int // position in the current chunk
	line  int
	units int // UTF-16 units from the line start to pos
}

// advance moves the cursor forward to p in data.
func (c *cursor) advance(data []byte, p int) {
	if p <= c.pos {
		return
	}
	seg := data[c.pos:p]
	if nl := bytes.Count(seg, []byte{'\n'}); nl > 0 {
		c.line += nl
		c.units = utf16Len(seg[bytes.LastIndexByte(seg, '\n')+1:])
	} else {
		c.units += utf16Len(seg)
	}
	c.pos = p
}

// rebase shifts the cursor when the chunk's first `by` bytes are dropped.
func (c *cursor) rebase(by int) { c.pos -= by }

// utf16Len counts the UTF-16 code units of UTF-8 bytes (invalid bytes
// count one unit each, as a replacement character).
func utf16Len(b []byte) int {
	n := 0
	for _, c := range b {
		switch {
		case c < 0x80:
			n++
		case c < 0xC0: // continuation byte
		case c >= 0xF0:
			n += 2
		default:
			n++
		}
	}
	return n
}

type scanner struct {
	data       []byte
	limit      int
	eof        bool
	cur        *cursor // nil: Find, which needs no lines
	res        *Result
	endedInRun bool
	found      []found
}

// found is a credential at data[pos:end], before its line is known.
type found struct {
	pos, end     int
	kind, prefix string
}

// minRun is the shortest run the scan must see: every credential it looks
// for is at least this long (AWS's "secretAccessKey" name is 15). Runs are
// found by sampling every minRun-th byte: any run of minRun or more
// token bytes contains a sample, and a sample that is not a token byte
// rules out all runs through it, so most of the input is never touched.
const minRun = 14

// run scans the runs that start before limit; it returns where the next
// chunk resumes (at or after limit, never inside a scanned run).
func (s *scanner) run(skipLeading bool) int {
	d, n := s.data, len(s.data)
	lo := 0 // bytes before lo belong to runs already handled
	if skipLeading {
		for lo < n && tokenByte[d[lo]] {
			lo++
		}
	}
	resume := max(lo, s.limit)
	for p := lo + minRun - 1; p < n && p < s.limit+minRun-1; {
		if !tokenByte[d[p]] {
			p += minRun
			continue
		}
		st, en := p, p+1
		for st > lo && tokenByte[d[st-1]] {
			st--
		}
		if st >= s.limit {
			break // the next chunk starts before this run
		}
		for en < n && tokenByte[d[en]] {
			en++
		}
		if en == n && !s.eof {
			// The run reaches past what was read: a blob far longer than any
			// credential (scanAhead ≥ the chunk tail). Skip its rest too.
			s.endedInRun = true
			return n
		}
		if st > 0 && d[st-1] == '\\' {
			// A JSON escape glued to the run: "\nsk-…" is a newline, then the
			// key; "\u00e9" a character.
			switch d[st] {
			case 'n', 'r', 't', 'b', 'f':
				st++
			case 'u':
				st = min(st+5, en)
			}
		}
		if en-st >= minRun && en-st <= maxSecretRun {
			s.check(st, en)
		}
		lo, p = en, en+minRun
		resume = max(resume, en)
	}
	s.privateKeys(min(s.limit, n))
	// The cursor only moves forward: place the hits in file order.
	if len(s.found) > 1 { // (sort.Slice allocates even for none: Find runs per line)
		sort.Slice(s.found, func(i, j int) bool { return s.found[i].pos < s.found[j].pos })
	}
	if s.cur == nil {
		return resume
	}
	for _, f := range s.found {
		s.record(f)
	}
	return resume
}

// privateKeys finds "PRIVATE KEY-----" headers (their runs are too short
// for the sampled scan) in d[:end].
func (s *scanner) privateKeys(end int) {
	d := s.data
	marker := []byte("PRIVATE KEY")
	for i := 0; i < end; {
		j := bytes.Index(d[i:end], marker)
		if j < 0 {
			return
		}
		at := i + j
		i = at + len(marker)
		from := max(0, at-40)
		if b := bytes.LastIndex(d[from:at], []byte("-----BEGIN")); b >= 0 {
			st := from + b
			s.privateKey(st, st+len("-----BEGIN"))
		}
	}
}

func hasPrefixFold(b []byte, p string) bool {
	return len(b) >= len(p) && strings.EqualFold(string(b[:len(p)]), p)
}

func hasSuffixFold(b []byte, p string) bool {
	return len(b) >= len(p) && strings.EqualFold(string(b[len(b)-len(p):]), p)
}

// prefixKinds: credentials recognised by a literal prefix of the run, with
// the shortest plausible length of the whole run.
var prefixKinds = []struct {
	prefix string
	min    int
	kind   string
}{
	{"sk-ant-", 40, "Anthropic API key"},
	{"sk-or-v1-", 40, "OpenRouter API key"},
	{"sk-proj-", 40, "OpenAI API key"},
	{"sk-svcacct-", 40, "OpenAI API key"},
	{"sk-admin-", 40, "OpenAI admin key"},
	{"sk_live_", 24, "Stripe live secret key"},
	{"rk_live_", 24, "Stripe live restricted key"},
	{"ghp_", 40, "GitHub token"},
	{"gho_", 40, "GitHub OAuth token"},
	{"ghu_", 40, "GitHub user token"},
	{"ghs_", 40, "GitHub app token"},
	{"ghr_", 40, "GitHub refresh token"},
	{"github_pat_", 40, "GitHub fine-grained token"},
	{"glpat-", 26, "GitLab token"},
	{"xoxb-", 24, "Slack bot token"},
	{"xoxp-", 24, "Slack user token"},
	{"xoxa-", 24, "Slack token"},
	{"xoxr-", 24, "Slack refresh token"},
	{"xoxs-", 24, "Slack token"},
	{"xoxe-", 24, "Slack token"},
	{"AIza", 39, "Google API key"},
	{"hf_", 34, "Hugging Face token"},
	{"gsk_", 40, "Groq API key"},
	{"xai-", 60, "xAI API key"},
	{"npm_", 40, "npm token"},
}

// prefixByFirst indexes prefixKinds by their first byte.
var prefixByFirst = func() (t [256][]int) {
	for i, k := range prefixKinds {
		t[k.prefix[0]] = append(t[k.prefix[0]], i)
	}
	return
}()

// check looks at the run d[st:en] (at least minRun long).
func (s *scanner) check(st, en int) {
	d := s.data
	run := d[st:en]
	if st >= 7 && hasPrefixFold(d[st-7:st], "bearer ") {
		s.bearer(st-7, st-1)
		return
	}
	switch run[0] {
	case 'e':
		if run[1] == 'y' && run[2] == 'J' {
			s.jwt(st, en)
		}
		return
	case 'A':
		if len(run) == 20 && (run[1] == 'K' || run[1] == 'S') && run[2] == 'I' && run[3] == 'A' && upperAlnum(run) && !placeholder(run) {
			s.hit(st, en, "AWS access key id", string(run[:4]))
			return
		}
	}
	if last := run[len(run)-1]; (last == 'y' || last == 'Y') && (hasSuffixFold(run, "secret_access_key") || hasSuffixFold(run, "secretaccesskey")) {
		s.awsSecret(en)
		return
	}
	for _, i := range prefixByFirst[run[0]] {
		k := prefixKinds[i]
		if len(run) >= k.min && string(run[:len(k.prefix)]) == k.prefix {
			if !placeholder(run[len(k.prefix):]) {
				s.hit(st, en, k.kind, k.prefix)
			}
			return
		}
	}
	// Bare "sk-" keys: OpenAI's legacy 48-character keys, DeepSeek,
	// Moonshot and most OpenAI-compatible providers.
	if len(run) >= 35 && run[0] == 's' && run[1] == 'k' && run[2] == '-' && !placeholder(run[3:]) && mixedAlnum(run[3:]) {
		s.hit(st, en, "API key (sk-…)", "sk-")
	}
}

// jwt: three base64url runs joined by dots, the first two starting "eyJ"
// (a JSON object).
func (s *scanner) jwt(st, en int) {
	d := s.data
	if en-st < 10 || en >= len(d) || d[en] != '.' {
		return
	}
	p := en + 1
	q := p
	for q < len(d) && tokenByte[d[q]] {
		q++
	}
	if q-p < 10 || d[p] != 'e' || d[p+1] != 'y' || q >= len(d) || d[q] != '.' {
		return
	}
	r := q + 1
	for r < len(d) && tokenByte[d[r]] {
		r++
	}
	if r-q-1 < 16 {
		return // unsigned or truncated: not a usable token
	}
	s.hit(st, r, "JSON Web Token", "eyJ")
}

// privateKey: "-----BEGIN [RSA |EC |OPENSSH |…]PRIVATE KEY-----" followed
// by key material (not a "..." placeholder).
func (s *scanner) privateKey(st, en int) {
	d := s.data
	head := d[en:min(len(d), en+40)]
	i := bytes.Index(head, []byte("PRIVATE KEY-----"))
	if i < 0 {
		i = bytes.Index(head, []byte("PRIVATE KEY BLOCK-----"))
	}
	if i < 0 {
		return
	}
	label := "-----BEGIN" + string(head[:i]) + "PRIVATE KEY-----"
	body := d[en+i : min(len(d), en+i+400)]
	material := 0
	for _, c := range body {
		if tokenByte[c] || c == '+' || c == '/' {
			material++
		}
	}
	if material < 120 {
		return
	}
	end := en + i + len("PRIVATE KEY-----")
	if e := bytes.Index(d[end:min(len(d), end+scanAhead/2)], []byte("-----END")); e >= 0 {
		end += e + len("-----END")
	}
	s.hit(st, end, "private key", label)
}

// bearer: "Bearer <token>" with a token that is not a placeholder.
func (s *scanner) bearer(st, en int) {
	d := s.data
	if en >= len(d) || d[en] != ' ' {
		return
	}
	p := en + 1
	q := p
	for q < len(d) && (tokenByte[d[q]] || d[q] == '.' || d[q] == '~' || d[q] == '+' || d[q] == '/') {
		q++
	}
	for q < len(d) && d[q] == '=' {
		q++
	}
	tok := d[p:q]
	if len(tok) < 20 || placeholder(tok) || !mixedAlnum(tok) {
		return
	}
	if bytes.HasPrefix(tok, []byte("eyJ")) && bytes.Count(tok, []byte{'.'}) == 2 {
		return // reported as a JSON Web Token
	}
	s.hit(st, q, "bearer token", "Bearer ")
}

// awsSecret: a 40-character secret access key after its variable name.
func (s *scanner) awsSecret(en int) {
	d := s.data
	p := en
	for p < len(d) && p < en+12 && strings.IndexByte(" \t\"'=:\\,", d[p]) >= 0 {
		p++
	}
	q := p
	for q < len(d) && (tokenByte[d[q]] && d[q] != '-' && d[q] != '_' || d[q] == '+' || d[q] == '/') {
		q++
	}
	if q-p != 40 || placeholder(d[p:q]) || !mixedAlnum(d[p:q]) {
		return
	}
	s.hit(p, q, "AWS secret access key", "")
}

// hit notes a credential d[st:en].
func (s *scanner) hit(st, en int, kind, prefix string) {
	s.found = append(s.found, found{pos: st, end: en, kind: kind, prefix: prefix})
}

// record turns a hit into a Hit with its line and column.
func (s *scanner) record(f found) {
	st, en, kind, prefix := f.pos, f.end, f.kind, f.prefix
	s.cur.advance(s.data, st)
	value := s.data[st:en]
	masked := prefix + "…"
	if prefix == "" {
		masked = "…"
	}
	masked += fmt.Sprintf(" (%d chars)", len(value))
	s.res.Hits = append(s.res.Hits, Hit{Line: s.cur.line, Col: s.cur.units + 1, Kind: kind,
		Masked: masked, Fingerprint: Fingerprint(value)})
}

// Fingerprint tells occurrences of the same secret apart without showing
// it: the first 8 hex digits of the sha256 of its bytes.
func Fingerprint(value []byte) string {
	sum := sha256.Sum256(value)
	return hex.EncodeToString(sum[:4])
}

func upperAlnum(b []byte) bool {
	for _, c := range b {
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// mixedAlnum requires letters and digits and enough randomness: real keys
// are random, identifiers and prose are not.
func mixedAlnum(b []byte) bool {
	var letters, digits int
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			digits++
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			letters++
		}
	}
	return letters > 0 && digits > 0 && entropy(b) >= 3.5
}

// entropy is the Shannon entropy of b in bits per byte.
func entropy(b []byte) float64 {
	var counts [256]int
	for _, c := range b {
		counts[c]++
	}
	h := 0.0
	n := float64(len(b))
	for _, k := range counts {
		if k > 0 {
			p := float64(k) / n
			h -= p * math.Log2(p)
		}
	}
	return h
}

var placeholderWords = []string{"example", "xxxxx", "your", "placeholder", "redacted", "dummy", "sample", "*****", "....", "fake", "changeme", "insert"}

// placeholder reports documentation values: "sk-proj-xxxxxxxx",
// "AKIAIOSFODNN7EXAMPLE", "Bearer YOUR_TOKEN", repeated characters.
func placeholder(b []byte) bool {
	low := strings.ToLower(string(b))
	for _, w := range placeholderWords {
		if strings.Contains(low, w) {
			return true
		}
	}
	return len(b) >= 16 && entropy(b) < 3.0
}
