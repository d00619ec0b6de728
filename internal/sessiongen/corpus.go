package sessiongen

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
)

// Word lists for the synthetic coding conversation. They are small on
// purpose: realism comes from the structure (paths, code, logs, JSON), and
// planted facts stay distinctive because their random parts never occur here.
var (
	nouns = strings.Fields(`importer exporter parser scheduler cache index session transcript
		budget gauge window summary checkpoint config loader writer reader router handler
		queue worker retry backoff token tokenizer estimator compactor snapshot manifest
		registry plugin adapter client server listener migration schema record batch
		stream buffer chunk offset cursor lease lock watcher notifier metrics tracer`)
	verbs = []string{"refactor", "fix", "extend", "simplify", "rename", "split", "document", "test", "harden",
		"speed up", "rewrite", "clean up", "review", "validate", "migrate", "instrument"}
	adjs = strings.Fields(`flaky slow stale missing duplicated broken partial nested
		concurrent atomic lazy cached streaming incremental deterministic`)
	dirs    = strings.Fields(`pkg internal cmd lib src api tools scripts`)
	goTypes = strings.Fields(`string int int64 bool error []byte time.Duration *Session map[string]int`)
	// techs: alternatives within one family, for planted decisions
	techs = [][]string{{"SQLite", "Postgres", "BadgerDB", "BoltDB", "Redis"}, {"NATS", "Kafka", "gRPC streams"},
		{"protobuf", "msgpack", "CBOR"}, {"zstd", "lz4", "gzip"}}
	cjkWords = []string{"我们", "需要", "修改", "配置文件", "以便", "支持", "增量", "压缩", "会话",
		"记录", "上下文", "窗口", "模型", "工具调用", "结果", "测试", "失败", "原因", "是", "因为",
		"缓存", "过期", "请", "检查", "日志", "然后", "重新", "运行", "所有", "单元测试", "并且",
		"更新", "文档", "性能", "明显", "提升", "错误", "处理", "边界", "情况", "数据库", "迁移",
		"脚本", "部署", "到", "预发布", "环境", "令牌", "估算", "偏低", "摘要", "保留", "最近",
		"消息", "分支", "检查点", "恢复", "ロック", "ファイル", "설정", "세션"}
	cjkCodes   = []string{"青龙", "白虎", "朱雀", "玄武", "麒麟", "凤凰", "昆仑", "泰山", "长江", "黄河", "星河", "银杏"}
	cjkNums    = []string{"一", "二", "三", "四", "五", "六", "七", "八", "九", "十"}
	cjkThings  = []string{"部署计划", "迁移方案", "密钥轮换", "灰度发布", "压缩策略", "回滚预案"}
	cjkPhases  = []string{"阶段", "批次", "里程碑"}
	proseWords = strings.Fields(`the a this that we it should would could because when after before
		so then also only still already now instead and but or not with without into from for
		of on in at by about over under between all every each most some`)
)

// corpus holds pre-generated text the generator slices tool results from,
// so that producing hundreds of MB costs little more than copying bytes.
type corpus struct {
	code, json, prose                string
	sentences, cjk                   []string // pools the conversation's prose is picked from
	tests                            []string // go test outputs (even = pass, odd = fail)
	grep, gitlog                     string   // rg / git log output
	b64                              string   // random base64 for signatures
	grepLines, gitLines              []int
	codeLines, jsonLines, proseLines []int // line start offsets
}

func newCorpus(r *rand.Rand) *corpus {
	c := &corpus{}
	var sb strings.Builder
	for sb.Len() < 192<<10 {
		writeGoFile(&sb, r)
	}
	c.code = sb.String()
	sb.Reset()
	for sb.Len() < 192<<10 {
		writeJSONRecord(&sb, r)
	}
	c.json = sb.String()
	sb.Reset()
	for sb.Len() < 96<<10 {
		writeMarkdown(&sb, r)
	}
	c.prose = sb.String()
	for i := 0; i < 4096; i++ {
		c.sentences = append(c.sentences, sentence(r))
	}
	for i := 0; i < 1024; i++ {
		c.cjk = append(c.cjk, cjkSentence(r))
	}
	for i := 0; i < 256; i++ {
		c.tests = append(c.tests, testOutput(r, i%2 == 1))
	}
	sb.Reset()
	for sb.Len() < 64<<10 {
		fmt.Fprintf(&sb, "%s:%d:%s", goPath(r), 1+r.IntN(900), slice(r, c.code, lineStarts(c.code[:4096]), 1))
	}
	c.grep = sb.String()
	c.gitlog = gitLog(r, 2000)
	c.b64 = b64String(r, 64<<10)
	c.grepLines = lineStarts(c.grep)
	c.gitLines = lineStarts(c.gitlog)
	c.codeLines = lineStarts(c.code)
	c.jsonLines = lineStarts(c.json)
	c.proseLines = lineStarts(c.prose)
	return c
}

func lineStarts(s string) []int {
	out := []int{0}
	for i := 0; i < len(s)-1; i++ {
		if s[i] == '\n' {
			out = append(out, i+1)
		}
	}
	return out
}

// slice returns about n bytes of whole lines from text starting at a random
// line, wrapping around (so any size can be produced).
func slice(r *rand.Rand, text string, starts []int, n int) string {
	if n <= 0 {
		return ""
	}
	pos := starts[r.IntN(len(starts))]
	lineEnd := func(end int) int {
		if k := strings.IndexByte(text[end:], '\n'); k >= 0 {
			return end + k + 1
		}
		return len(text)
	}
	if pos+n <= len(text) {
		return text[pos:lineEnd(pos+n)] // no copy
	}
	var sb strings.Builder
	sb.Grow(n + 256)
	for sb.Len() < n {
		end := lineEnd(min(len(text), pos+(n-sb.Len())))
		sb.WriteString(text[pos:end])
		pos = end
		if pos >= len(text) {
			pos = 0
		}
	}
	return sb.String()
}

// paragraph joins n sentences picked from a pool (CJK sentences need no
// separator).
func paragraph(r *rand.Rand, pool []string, n int, sep string) string {
	if n == 1 {
		return pool[r.IntN(len(pool))]
	}
	parts := make([]string, n)
	for i := range parts {
		parts[i] = pool[r.IntN(len(pool))]
	}
	return strings.Join(parts, sep)
}

func pick(r *rand.Rand, xs []string) string { return xs[r.IntN(len(xs))] }

func ident(r *rand.Rand, exported bool) string {
	a, b := pick(r, nouns), pick(r, nouns)
	if exported {
		return strings.ToUpper(a[:1]) + a[1:] + strings.ToUpper(b[:1]) + b[1:]
	}
	return a + strings.ToUpper(b[:1]) + b[1:]
}

func writeGoFile(sb *strings.Builder, r *rand.Rand) {
	pkg := pick(r, nouns)
	fmt.Fprintf(sb, "package %s\n\nimport (\n\t\"context\"\n\t\"errors\"\n\t\"fmt\"\n\t\"io\"\n\t\"time\"\n)\n\n", pkg)
	for i := 0; i < 3+r.IntN(5); i++ {
		typ := ident(r, true)
		fmt.Fprintf(sb, "// %s %s the %s of a %s. It is safe for concurrent use.\ntype %s struct {\n", typ, pick(r, []string{"tracks", "owns", "caches", "guards", "validates", "serialises"}), pick(r, nouns), pick(r, nouns), typ)
		for j := 0; j < 2+r.IntN(5); j++ {
			fmt.Fprintf(sb, "\t%s %s `json:\"%s,omitempty\"`\n", ident(r, true), pick(r, goTypes), pick(r, nouns))
		}
		sb.WriteString("}\n\n")
		fn := ident(r, true)
		fmt.Fprintf(sb, "// %s returns an error when the %s is %s.\nfunc (x *%s) %s(ctx context.Context, r io.Reader, limit int) (int, error) {\n", fn, pick(r, nouns), pick(r, adjs), typ, fn)
		for j := 0; j < 2+r.IntN(4); j++ {
			v := ident(r, false)
			switch r.IntN(4) {
			case 0:
				fmt.Fprintf(sb, "\t%s, err := x.%s(ctx, %d)\n\tif err != nil {\n\t\treturn 0, fmt.Errorf(\"%s: %%w\", err)\n\t}\n", v, ident(r, true), r.IntN(512), pick(r, nouns))
			case 1:
				fmt.Fprintf(sb, "\tfor i := 0; i < limit; i++ {\n\t\tif x.%s[i] == nil {\n\t\t\tcontinue\n\t\t}\n\t\t%s += len(x.%s[i].Name) // keep <= 4k & avoid \"%s\"\n\t}\n", ident(r, true), v, ident(r, true), pick(r, adjs))
			case 2:
				fmt.Fprintf(sb, "\tselect {\n\tcase <-ctx.Done():\n\t\treturn 0, ctx.Err()\n\tcase <-time.After(%d * time.Millisecond):\n\t}\n", 50*(1+r.IntN(20)))
			default:
				fmt.Fprintf(sb, "\tif %s := x.%s; %s > limit {\n\t\treturn 0, errors.New(\"%s %s exceeds limit\")\n\t}\n", v, ident(r, true), v, pick(r, nouns), pick(r, adjs))
			}
		}
		fmt.Fprintf(sb, "\treturn %d, nil\n}\n\n", r.IntN(100))
	}
}

func writeJSONRecord(sb *strings.Builder, r *rand.Rand) {
	fmt.Fprintf(sb, "{\n  \"id\": \"%08x-%04x\",\n  \"name\": \"%s-%s\",\n  \"status\": \"%s\",\n  \"createdAt\": \"2026-02-%02dT%02d:%02d:%02d.%03dZ\",\n  \"tags\": [\"%s\", \"%s\"],\n  \"metrics\": {\n    \"p50_ms\": %.2f,\n    \"p99_ms\": %.1f,\n    \"count\": %d,\n    \"errorRate\": %g\n  },\n  \"owner\": {\"team\": \"%s\", \"oncall\": %t}\n},\n",
		r.Uint32(), r.IntN(1<<16), pick(r, nouns), pick(r, nouns), pick(r, []string{"ok", "degraded", "failed", "pending"}),
		1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60), r.IntN(1000), pick(r, adjs), pick(r, nouns),
		r.Float64()*40, 40+r.Float64()*900, r.IntN(10000), math.Round(r.Float64()*1000)/100000, pick(r, nouns), r.IntN(2) == 0)
}

func writeMarkdown(sb *strings.Builder, r *rand.Rand) {
	fmt.Fprintf(sb, "## %s %s\n\n", strings.ToUpper(pick(r, nouns)[:1])+pick(r, nouns)[1:], pick(r, nouns))
	for i := 0; i < 2+r.IntN(3); i++ {
		sb.WriteString(proseParagraph(r, 3+r.IntN(4)))
		sb.WriteString("\n\n")
	}
	for i := 0; i < r.IntN(4); i++ {
		fmt.Fprintf(sb, "- %s\n", sentence(r))
	}
	sb.WriteString("\n")
}

// sentence is one English-like technical sentence.
func sentence(r *rand.Rand) string {
	switch r.IntN(5) {
	case 0:
		return fmt.Sprintf("The %s %s keeps the %s %s, so %s %s would %s the %s.", pick(r, adjs), pick(r, nouns), pick(r, nouns), pick(r, adjs), pick(r, proseWords), pick(r, nouns), pick(r, verbs), pick(r, nouns))
	case 1:
		return fmt.Sprintf("We should %s the %s before the %s runs, because the %s is %s after a restart.", pick(r, verbs), pick(r, nouns), pick(r, nouns), pick(r, nouns), pick(r, adjs))
	case 2:
		return fmt.Sprintf("When the %s is %s, the %s falls back to the %s and logs a warning with the %s id.", pick(r, nouns), pick(r, adjs), pick(r, nouns), pick(r, nouns), pick(r, nouns))
	case 3:
		return fmt.Sprintf("I checked %s and the %s only happens with %s %s input.", goPath(r), pick(r, nouns), pick(r, adjs), pick(r, nouns))
	}
	return fmt.Sprintf("After that change the %s no longer needs the %s, which makes the %s about %d%% faster.", pick(r, nouns), pick(r, nouns), pick(r, nouns), 5+r.IntN(60))
}

func proseParagraph(r *rand.Rand, n int) string {
	var sb strings.Builder
	for i := 0; i < n; i++ {
		if i > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(sentence(r))
	}
	return sb.String()
}

func cjkSentence(r *rand.Rand) string {
	var sb strings.Builder
	n := 6 + r.IntN(10)
	for i := 0; i < n; i++ {
		sb.WriteString(pick(r, cjkWords))
		if i == n/2 {
			sb.WriteString("，")
		}
	}
	if r.IntN(3) == 0 {
		sb.WriteString(" `" + goPath(r) + "` ")
	}
	sb.WriteString("。")
	return sb.String()
}

func goPath(r *rand.Rand) string {
	return fmt.Sprintf("%s/%s/%s.go", pick(r, dirs), pick(r, nouns), pick(r, nouns))
}

func testOutput(r *rand.Rand, fail bool) string {
	var sb strings.Builder
	mod := "github.com/acme/" + pick(r, nouns)
	for i := 0; i < 2+r.IntN(6); i++ {
		name := "Test" + ident(r, true)
		fmt.Fprintf(&sb, "=== RUN   %s\n--- PASS: %s (0.%02ds)\n", name, name, r.IntN(100))
	}
	if fail {
		name := "Test" + ident(r, true)
		fmt.Fprintf(&sb, "=== RUN   %s\n    %s_test.go:%d: got %d, want %d\n--- FAIL: %s (0.%02ds)\nFAIL\nFAIL\t%s/%s\t0.%03ds\n", name, pick(r, nouns), 10+r.IntN(300), r.IntN(100), r.IntN(100), name, r.IntN(100), mod, pick(r, nouns), r.IntN(1000))
	} else {
		fmt.Fprintf(&sb, "PASS\nok  \t%s/%s\t0.%03ds\n", mod, pick(r, nouns), r.IntN(1000))
	}
	return sb.String()
}

func gitLog(r *rand.Rand, n int) string {
	var sb strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&sb, "%07x %s %s in %s\n", r.Uint32()&0xfffffff, pick(r, verbs), pick(r, nouns), pick(r, nouns))
	}
	return sb.String()
}

func hexString(r *rand.Rand, n int) string {
	return randString(r, n, "0123456789abcdef", 4)
}

func b64String(r *rand.Rand, n int) string {
	return randString(r, n, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", 6)
}

// randString draws n characters from an alphabet of 2^bits symbols, using
// every bit of each random word.
func randString(r *rand.Rand, n int, alphabet string, bits uint) string {
	b := make([]byte, n)
	var v uint64
	left := uint(0)
	mask := uint64(1)<<bits - 1
	for i := range b {
		if left < bits {
			v, left = r.Uint64(), 64
		}
		b[i] = alphabet[v&mask]
		v >>= bits
		left -= bits
	}
	return string(b)
}
