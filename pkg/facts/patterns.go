package facts

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ctxtool/ctxtool/pkg/internal/lazyre"
)

// Identifier shapes. Order matters: URLs first (they contain paths and
// host:port), then paths, UUIDs (contain hex runs), the rest; each match is
// blanked before the next pattern runs so no identifier is found twice.
var (
	reURL      = lazyre.New(`https?://[^\s"'<>()\[\]{}` + "`" + `]+`)
	reAbsPath  = lazyre.New(`(?:^|[\s"'(=:\[,])((?:~|\.{1,2})?(?:/[\w.@+-]+){2,}/?)`)
	reRelPath  = lazyre.New("(?:^|[\\s\"'(=:\\[,`])([\\w-][\\w.-]*(?:/[\\w.@+-]+)+\\.[A-Za-z][A-Za-z0-9]{0,7})\\b")
	reUUID     = lazyre.New(`\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b`)
	reHex      = lazyre.New(`\b[0-9a-f]{7,64}\b`)
	reHostPort = lazyre.New(`\b(?:localhost|\d{1,3}(?:\.\d{1,3}){3}|[a-zA-Z][\w-]*(?:\.[\w-]+)+):\d{2,5}\b`)
	reTicket   = lazyre.New(`\b[A-Z][A-Z0-9]{1,9}-\d{1,6}\b`)
	reIssue    = lazyre.New(`(?:\b[\w.-]+/[\w.-]+)?#\d{3,7}\b|(?:\b[\w.-]+/[\w.-]+)#\d{1,7}\b`)
	reLongNum  = lazyre.New(`\b\d{6,}\b`)
	reHasDigit = lazyre.New(`\d`)
	reHasAlpha = lazyre.New(`[a-f]`)
)

type token struct{ kind, value string }

// findIdentifiers returns the identifiers of s and s with each of them
// replaced by a space (numbers are then looked for in what is left).
func findIdentifiers(s string) ([]token, string) {
	var out []token
	add := func(kind, v string) {
		v = strings.TrimRight(v, ".,;:)'\"]}>")
		if len(v) < 4 || len(v) > 300 {
			return
		}
		out = append(out, token{kind, v})
	}
	// Each pattern runs only when the text has the character its shape
	// needs: most sentences have none, and the regexps are the cost.
	digits := strings.ContainsAny(s, "0123456789")
	rest := s
	stage := func(ok bool, re func() *regexp.Regexp, g int, kind string) {
		if !ok {
			return
		}
		prev := rest
		var locs [][]int
		locs, rest = findAndBlank(re(), rest, g)
		for _, l := range locs {
			add(kind, prev[l[2*g]:l[2*g+1]])
		}
	}
	stage(strings.Contains(s, "://"), reURL, 0, "url")
	stage(strings.Contains(rest, "/"), reAbsPath, 1, "path")
	stage(strings.Contains(rest, "/"), reRelPath, 1, "path")
	stage(digits && strings.Count(rest, "-") >= 4, reUUID, 0, "uuid")
	stage(digits && strings.Contains(rest, ":"), reHostPort, 0, "hostport")
	stage(strings.Contains(rest, "#"), reIssue, 0, "issue")
	stage(digits && strings.Contains(rest, "-"), reTicket, 0, "ticket")
	if !digits {
		return out, rest
	}
	prev := rest
	var hexes [][]int
	for _, l := range reHex().FindAllStringIndex(prev, -1) {
		h := prev[l[0]:l[1]]
		if reHasDigit().MatchString(h) && reHasAlpha().MatchString(h) {
			hexes = append(hexes, l)
			add("hash", h)
		}
	}
	rest = blank(prev, hexes)
	stage(true, reLongNum, 0, "id")
	return out, rest
}

// findAndBlank returns the matches of re in s (group g's bounds in
// l[2g:2g+2]) and s with each group replaced by a space.
func findAndBlank(re *regexp.Regexp, s string, g int) ([][]int, string) {
	locs := re.FindAllStringSubmatchIndex(s, -1)
	if len(locs) == 0 {
		return nil, s
	}
	spans := make([][]int, len(locs))
	for i, l := range locs {
		spans[i] = l[2*g : 2*g+2]
	}
	return locs, blank(s, spans)
}

func blank(s string, spans [][]int) string {
	if len(spans) == 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	last := 0
	for _, l := range spans {
		b.WriteString(s[last:l[0]])
		b.WriteByte(' ')
		last = l[1]
	}
	b.WriteString(s[last:])
	return b.String()
}

// Numbers with context. Each pattern's whole match is the value.
var numberPatterns = []struct {
	kind string
	need cues // the lower-cased text must contain one (nil: always run)
	re   func() *regexp.Regexp
}{
	{"port", cues{"port"}, lazyre.New(`(?i)\bports?\s*(?:number\s*)?(?:=|:|is|of|to|on)?\s*\d{2,5}\b`)},
	{"version", cues{"."}, lazyre.New(`(?i)\bv\d+(?:\.\d+){1,3}(?:-[\w.]+)?\b|\b\d+\.\d+\.\d+(?:-[\w.]+)?\b|\b(?:version|go|node|python|java|ruby|rust|postgres(?:ql)?|mysql|redis|ubuntu|debian|kubernetes|k8s)\s+v?\d+(?:\.\d+)+\b`)},
	{"percent", cues{"%"}, lazyre.New(`\b\d+(?:\.\d+)?\s?%`)},
	{"size", cues{"b"}, lazyre.New(`\b\d+(?:\.\d+)?\s?(?:[KMGTP]i?B|[kmg]b|bytes?)\b`)},
	{"duration", nil, lazyre.New(`\b\d+(?:\.\d+)?\s?(?:ms|µs|us|ns|secs?|seconds?|mins?|minutes?|hrs?|hours?|days?|weeks?|s|h)\b`)},
	{"count", cues{"limit", "max", "min", "at ", "up to", "no more", "timeout", "retries", "worker", "thread", "replica", "batch", "pool", "concurrency", "ttl", "interval", "threshold", "quota", "budget", "capacity", "shard", "partition"}, lazyre.New(`(?i)\b(?:limit|max(?:imum)?|min(?:imum)?|at most|at least|up to|no more than|timeout|retries|workers?|threads?|replicas?|batch size|pool size|concurrency|ttl|interval|threshold|quota|budget|capacity|shards?|partitions?|rate limit)\b(?:\s+(?:of|is|=|to|at|set to|:))?\s+\d[\d,]*(?:\.\d+)?\b`)},
	{"count", nil, lazyre.New(`(?i)\b\d[\d,]*(?:\.\d+)?\s+(?:requests?|tokens?|rows?|connections?|retries|attempts?|workers?|threads?|characters?|chars|records?|replicas?|nodes?|pods?|shards?|partitions?|goroutines?|concurrent \w+|req/s|rps|qps)\b`)},
}

// findNumbers returns the numbers of s that have a unit or a context word.
// A number is reported once, by the first pattern that claims it.
func findNumbers(s string) []token {
	if !strings.ContainsAny(s, "0123456789") {
		return nil
	}
	var out []token
	lower := strings.ToLower(s)
	for _, p := range numberPatterns {
		if p.need != nil && !p.need.any(lower) {
			continue
		}
		locs := p.re().FindAllStringIndex(s, -1)
		for _, l := range locs {
			out = append(out, token{p.kind, strings.TrimSpace(s[l[0]:l[1]])})
		}
		s = blank(s, locs)
	}
	return out
}

// Statement cues.
var (
	reErrorCue    = lazyre.New(`\bFAIL\b|\bERROR\b|(?i:\berror\s*(?::(?:[^=]|$)|\])|\berr:\s|\bpanic:|\bfatal(?: error)?:|\b\w*exception\b|\btraceback\b|\bsegmentation fault\b|\bconnection refused\b|\bpermission denied\b|\bno such file or directory\b|\btimed out\b|\bexit (?:code|status):? [1-9]\d*|\bcommand not found\b|\bundefined: |\bfailed\b|\bfails\b|\bfailing\b)`)
	reConstraint  = lazyre.New(`(?i)\b(never|do not|don't|must not|mustn't|must|should not|shouldn't|should always|always|avoid|not allowed|forbidden|prohibited|make sure|under no circumstances|no more than|only (?:ever )?(?:use|run|deploy|touch|modify|edit|change|call|write|read|push|merge)|(?:keep|stay) (?:\w+ )?(?:under|below|within|on)|is required|are required|required to|has to|have to|need to stay|needs to stay|may not|cannot be|can't be)\b`)
	reDecision    = lazyre.New(`(?i)\b(we(?:'ve| have)? decided|decided (?:to|on|that)|decision(?: is| was)|let's (?:use|go with|keep|stick with|switch)|(?:we|i)(?:'ll| will) (?:use|go with|keep|switch to|stick with)|going (?:to go )?with|go with|chose|chosen|opt(?:ed)? (?:for|to)|settled on|agreed (?:on|to|that)|switch(?:ed|ing)? to|instead of|rather than|the plan is|the fix is|the approach is|we use|will be using|picked)\b|\bdecision\**:`)
	reRequestAny  = lazyre.New(`\b(?:TODO|FIXME)\b|(?i)\b(?:follow[- ]up|don't forget|do not forget|remember to|still need(?:s)? to|remaining work|open question)\b`)
	reRequestUser = lazyre.New(`(?i)^(?:please|pls|can you|could you|would you|will you|i need|we need|i want|we want|i'd like|we'd like|let's|also|and also|add|fix|implement|make|update|change|remove|write|create|run|check|investigate|look into|rename|move|refactor|document|test|migrate|bump|upgrade|deploy)\b|\bplease\b|\bcan you\b|\bcould you\b`)
	reRequestAsst = lazyre.New(`(?i)^(?:next|then|afterwards|later),? (?:i|we)(?:'ll| will)\b|\b(?:i|we)(?:'ll| will) (?:also |then |next |later )?(?:add|fix|update|write|run|check|implement|look|handle|do|finish|revisit|migrate)\b.*\b(?:next|later|afterwards|after that|tomorrow)\b`)
)

// reLogLine matches test-runner and log lines and JSON fields, whose
// numbers and "failed" states are data, not statements.
var reLogLine = lazyre.New(`^(?:--- |=== )?(?:PASS|FAIL|ok|RUN|SKIP)\b|^\d{4}-\d\d-\d\d[T ]\d|^"[^"]+"\s*:`)

// cues are cheap substring tests (on the lower-cased sentence) that a
// statement regexp can only match when one of them is there.
type cues []string

func (c cues) any(lower string) bool {
	for _, w := range c {
		if strings.Contains(lower, w) {
			return true
		}
	}
	return false
}

var (
	errorCues      = cues{"error", "err:", "fail", "panic", "fatal", "exception", "traceback", "segmentation", "refused", "denied", "no such file", "timed out", "exit ", "not found", "undefined"}
	constraintCues = cues{"never", "not", "n't", "must", "always", "avoid", "allowed", "forbidden", "prohibited", "make sure", "no more than", "only", "keep", "stay", "required", "has to", "have to"}
	decisionCues   = cues{"decid", "decision", "let's", "'ll", "will", "going", "go with", "chose", "opt", "settled", "agreed", "switch", "instead", "rather", "plan is", "fix is", "approach is", "we use", "picked"}
	requestCues    = cues{"todo", "fixme", "follow", "forget", "remember", "still need", "remaining", "open question"}
)

func isError(sen, role string) bool {
	if !errorCues.any(strings.ToLower(sen)) {
		return false
	}
	if isToolOutput(role) && strings.HasPrefix(sen, `"`) && reLogLine().MatchString(sen) {
		return false // a JSON field such as "status": "failed"
	}
	if role == "user" || role == "assistant" {
		// prose mentions "failed" casually; ask for an error shape
		return reErrorCue().MatchString(sen) && (strings.Contains(sen, ":") || strings.Contains(strings.ToLower(sen), "failed") || strings.Contains(strings.ToLower(sen), "error"))
	}
	return reErrorCue().MatchString(sen)
}

func isConstraint(sen string) bool {
	return constraintCues.any(strings.ToLower(sen)) && reConstraint().MatchString(sen)
}

func isDecision(sen string) bool {
	return decisionCues.any(strings.ToLower(sen)) && reDecision().MatchString(sen)
}

func isRequest(sen, role string, prose bool) bool {
	if requestCues.any(strings.ToLower(sen)) && reRequestAny().MatchString(sen) {
		return true
	}
	if !prose {
		return false
	}
	switch role {
	case "user":
		return reRequestUser().MatchString(sen) || strings.HasSuffix(sen, "?")
	case "assistant":
		return reRequestAsst().MatchString(sen)
	}
	return false
}

// looksLikeProse reports whether a sentence reads as words rather than
// code, JSON or a table row: mostly letters and spaces, at least three
// words.
func looksLikeProse(s string) bool {
	letters, spaces, other, words := 0, 0, 0, 0
	inWord := false
	for _, r := range s {
		switch {
		case unicode.IsLetter(r):
			letters++
			if !inWord {
				words++
				inWord = true
			}
			continue
		case unicode.IsSpace(r):
			spaces++
		case strings.ContainsRune("{}[]<>=;|\\$&*", r):
			other += 2
		default:
			other++
		}
		inWord = false
	}
	total := letters + spaces + other
	if total == 0 || words < 3 {
		return false
	}
	// CJK has no spaces between words: letters alone carry it
	if float64(letters+spaces)/float64(total) < 0.75 {
		return false
	}
	return !(strings.ContainsAny(s, ":+-=>()&|!;{") && reCode().MatchString(s))
}

// reCode matches shapes that only occur in code.
var reCode = lazyre.New(`:=|\+=|-=|=>|->|\(\)|\);|\)\s*\{|\bfunc\b|\breturn\b.*;|^\s*(?:if|for|while)\s*\(|&&|\|\||!=|==`)

// Sentences splits text into trimmed sentences: at . ! ? followed by a
// space or the end (so ~/.pi and v1.2 survive), at CJK full stops and at
// line breaks. Markdown list and quote markers and comment leaders are
// trimmed. Empty pieces are dropped.
func Sentences(s string) []string {
	var out []string
	start := 0
	emit := func(end int) {
		if end > start {
			if m := trimSentence(s[start:end]); m != "" {
				out = append(out, m)
			}
		}
		start = end
	}
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '\n':
			emit(i)
			start = i + 1
		case r == '。' || r == '！' || r == '？':
			emit(i + w)
		case r == '.' || r == '!' || r == '?':
			if i+1 == len(s) || s[i+1] == ' ' || s[i+1] == '\t' || s[i+1] == '\n' || s[i+1] == '\r' {
				emit(i + 1)
			}
		}
		i += w
	}
	emit(len(s))
	return out
}

func trimSentence(s string) string {
	s = strings.TrimSpace(s)
	for {
		t := strings.TrimLeft(s, "-*#>•+ \t")
		t = strings.TrimPrefix(t, "//")
		t = strings.TrimPrefix(t, "[ ] ")
		t = strings.TrimPrefix(t, "[x] ")
		t = strings.TrimSpace(t)
		if t == s {
			return s
		}
		s = t
	}
}

// around returns sen, or when it is longer than MaxSentence a window of it
// around v.
func around(sen, v string) string {
	if runeLen(sen) <= MaxSentence {
		return sen
	}
	i := strings.Index(sen, v)
	if i < 0 {
		return clip(sen, MaxSentence)
	}
	pre := []rune(sen[:i])
	post := []rune(sen[i+len(v):])
	room := (MaxSentence - runeLen(v)) / 2
	if room < 0 {
		room = 0
	}
	var b strings.Builder
	if len(pre) > room {
		b.WriteString("…")
		pre = pre[len(pre)-room:]
	}
	b.WriteString(string(pre))
	b.WriteString(v)
	if len(post) > room {
		b.WriteString(string(post[:room]))
		b.WriteString("…")
	} else {
		b.WriteString(string(post))
	}
	return strings.TrimSpace(b.String())
}

// clip cuts s to n runes with an ellipsis.
func clip(s string, n int) string {
	if runeLen(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimSpace(string(r[:n-1])) + "…"
}

func runeLen(s string) int { return utf8.RuneCountInString(s) }
