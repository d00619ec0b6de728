package report

import (
	"fmt"
	"html/template"
	"io"
	"path/filepath"
	"sync"

	"github.com/ctxtool/ctxtool/pkg/human"
)

// palette colors the parts in order (system and tools first).
var palette = []string{"#6b7280", "#2563eb", "#16a34a", "#f59e0b", "#dc2626", "#9333ea", "#0891b2", "#db2777", "#65a30d", "#ea580c"}

type svgRect struct {
	X, W  float64
	Color string
	Name  string
}

type svgMark struct {
	X    float64
	Line int
}

type page struct {
	*Report
	Base, Used  string
	PartRows    []partRow
	Bar         []svgRect
	Points      string
	Marks       []svgMark
	MaxTokens   int
	Chart       bool
	WindowY     float64
	FirstLine   int
	LastLine    int
	RequestsLen int
}

type partRow struct {
	Name, Share, Color string
	Tokens             int
}

const (
	barWidth   = 760.0
	chartW     = 760.0
	chartH     = 220.0
	chartLeft  = 0.0
	chartRight = chartLeft + chartW
)

// WriteHTML writes the page.
func (r *Report) WriteHTML(w io.Writer) error {
	p := page{Report: r, Base: filepath.Base(r.File), Used: human.Percent(r.Utilization)}
	total := 0
	for _, pt := range r.Parts {
		total += pt.Tokens
	}
	x := 0.0
	for i, pt := range r.Parts {
		c := palette[i%len(palette)]
		share := 0.0
		if r.Tokens > 0 {
			share = float64(pt.Tokens) / float64(r.Tokens)
		}
		p.PartRows = append(p.PartRows, partRow{Name: pt.Name, Tokens: pt.Tokens, Share: human.Percent(share), Color: c})
		if total > 0 {
			wd := barWidth * float64(pt.Tokens) / float64(total)
			p.Bar = append(p.Bar, svgRect{X: x, W: wd, Color: c, Name: pt.Name})
			x += wd
		}
	}
	if len(r.Requests) > 0 {
		p.Chart = true
		p.RequestsLen = len(r.Requests)
		p.FirstLine, p.LastLine = r.Requests[0].Line, r.Requests[len(r.Requests)-1].Line
		for _, l := range r.Compactions {
			p.FirstLine, p.LastLine = min(p.FirstLine, l), max(p.LastLine, l)
		}
		p.MaxTokens = r.ContextWindow
		for _, pt := range r.Requests {
			p.MaxTokens = max(p.MaxTokens, pt.Tokens)
		}
		xOf := func(line int) float64 {
			if p.LastLine == p.FirstLine {
				return chartLeft
			}
			return chartLeft + chartW*float64(line-p.FirstLine)/float64(p.LastLine-p.FirstLine)
		}
		yOf := func(t int) float64 { return chartH - chartH*float64(t)/float64(max(1, p.MaxTokens)) }
		for _, pt := range r.Requests {
			p.Points += fmt.Sprintf("%.1f,%.1f ", xOf(pt.Line), yOf(pt.Tokens))
		}
		for _, l := range r.Compactions {
			p.Marks = append(p.Marks, svgMark{X: xOf(l), Line: l})
		}
		p.WindowY = yOf(r.ContextWindow)
	}
	return pageTemplate().Execute(w, p)
}

// pageTemplate is parsed on first use, not at init: every command pays
// for package init.
var pageTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("report").Funcs(template.FuncMap{
		"num": func(n int) string {
			s := fmt.Sprint(n)
			out := ""
			for i, c := range s {
				if i > 0 && (len(s)-i)%3 == 0 {
					out += ","
				}
				out += string(c)
			}
			return out
		},
	}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px auto;max-width:800px;color:#111827;background:#fff}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:28px 0 8px}
.sub{color:#6b7280;margin:0 0 16px}
table{border-collapse:collapse;width:100%}td,th{padding:3px 8px;border-bottom:1px solid #e5e7eb;text-align:left}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
.sw{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:6px;vertical-align:middle}
svg text{font:11px system-ui,sans-serif;fill:#6b7280}
.gauge{font-size:28px;font-weight:600}
</style></head>
<body data-tokens="{{.Tokens}}">
<h1>{{.Base}}</h1>
<p class="sub">{{.Model}} · tokens counted with {{.Method}} · {{.File}}</p>
<p><span class="gauge" id="total" data-tokens="{{.Tokens}}">{{num .Tokens}}</span> tokens of a {{num .ContextWindow}}-token window: <b id="used">{{.Used}}</b> used</p>

<h2>The context now, by part</h2>
<svg id="parts" width="{{printf "%.0f" 760.0}}" height="28" viewBox="0 0 760 28" role="img" aria-label="context by part">
{{range .Bar}}<rect x="{{printf "%.2f" .X}}" y="0" width="{{printf "%.2f" .W}}" height="28" fill="{{.Color}}"><title>{{.Name}}</title></rect>
{{end}}</svg>
<table id="part-table"><tr><th>part</th><th class="n">tokens</th><th class="n">share</th></tr>
{{range .PartRows}}<tr class="part" data-part="{{.Name}}" data-tokens="{{.Tokens}}"><td><span class="sw" style="background:{{.Color}}"></span>{{.Name}}</td><td class="n">{{num .Tokens}}</td><td class="n">{{.Share}}</td></tr>
{{end}}</table>

<h2>How the context grew</h2>
{{if .Chart}}<svg id="timeline" width="760" height="250" viewBox="0 -10 760 260" role="img" aria-label="context per request">
<line x1="0" y1="{{printf "%.1f" .WindowY}}" x2="760" y2="{{printf "%.1f" .WindowY}}" stroke="#9ca3af" stroke-dasharray="4 3"/>
<text x="4" y="{{printf "%.1f" .WindowY}}" dy="-3">window {{num .ContextWindow}}</text>
{{range .Marks}}<line class="compaction" data-line="{{.Line}}" x1="{{printf "%.1f" .X}}" y1="0" x2="{{printf "%.1f" .X}}" y2="220" stroke="#dc2626" stroke-width="1.5"><title>compaction at line {{.Line}}</title></line>
{{end}}<polyline points="{{.Points}}" fill="none" stroke="#2563eb" stroke-width="2"/>
<line x1="0" y1="220" x2="760" y2="220" stroke="#d1d5db"/>
<text x="0" y="238">line {{.FirstLine}}</text><text x="760" y="238" text-anchor="end">line {{.LastLine}}</text>
</svg>
<p class="sub">{{.RequestsLen}} requests by their usage records (blue); compactions in red ({{len .Compactions}}).</p>
{{else}}<p class="sub">No usage records in this session: nothing to draw over time.</p>{{end}}

<h2>The biggest messages in the context</h2>
<table id="biggest"><tr><th class="n">line</th><th>role</th><th>entry</th><th class="n">tokens</th></tr>
{{range .Biggest}}<tr class="msg" id="L{{.Line}}" data-line="{{.Line}}" data-tokens="{{.Tokens}}"><td class="n"><a href="#L{{.Line}}">{{.Line}}</a></td><td>{{.Role}}</td><td>{{.EntryID}}</td><td class="n">{{num .Tokens}}</td></tr>
{{end}}</table>
<p class="sub">Made by ctxtool report. Lines are the session file's: <code>sed -n 'LINEp' {{.Base}}</code> shows one.</p>
<script>
// A check a browser runs: the parts add up to the total.
(function(){var s=0;document.querySelectorAll("tr.part").forEach(function(r){s+=+r.dataset.tokens});document.body.dataset.partsSum=s;document.body.dataset.rendered="yes"})();
</script>
</body></html>
`))
})
