package transcript

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ctxtool/ctxtool/pkg/internal/jsout"
)

// CurrentSystemMessage is pi-ai 1.6.0's getCurrentSystemMessage over the
// context: every system message replayed into one — their text contents
// joined by a blank line, their sections merged in order (null removes
// one), their tools added and removed by name — with timestamp ms. pi
// writes it as the systemMessage of the compactions it appends, so that
// the summary's context keeps the system prompt; ctxtool's compactions do
// the same. nil when the context has no system message (sessions of pi <
// 1.6, OpenClaw).
func (s *Session) CurrentSystemMessage(c *Context, ms int64) (json.RawMessage, error) {
	var texts []string
	var sections, tools orderedRaw
	seen := false
	for _, m := range c.Messages {
		if m.Role != "system" {
			continue
		}
		raw, err := s.Raw(m.Entry)
		if err != nil {
			return nil, err
		}
		var line map[string]json.RawMessage
		if err := json.Unmarshal(raw, &line); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", s.File, m.Entry.Line, err)
		}
		obj := line["message"]
		if m.Entry.rareOrNone().replayed {
			obj = line["systemMessage"]
		}
		var sm struct {
			Content      json.RawMessage `json:"content"`
			Sections     json.RawMessage `json:"sections"`
			ToolsAdded   []json.RawMessage
			ToolsRemoved []json.RawMessage
		}
		if err := json.Unmarshal(obj, &sm); err != nil {
			return nil, fmt.Errorf("%s:%d: system message: %w", s.File, m.Entry.Line, err)
		}
		seen = true
		if t := contentText(sm.Content); t != "" {
			texts = append(texts, t)
		}
		if err := sections.merge(sm.Sections); err != nil {
			return nil, fmt.Errorf("%s:%d: system message sections: %w", s.File, m.Entry.Line, err)
		}
		for _, t := range sm.ToolsRemoved {
			tools.del(toolName(t))
		}
		for _, t := range sm.ToolsAdded {
			tools.set(toolName(t), t)
		}
	}
	if !seen {
		return nil, nil
	}
	var b bytes.Buffer
	b.WriteString(`{"role":"system","content":`)
	b.Write(jsout.AppendString(nil, strings.Join(texts, "\n\n")))
	if len(sections.keys) > 0 {
		b.WriteString(`,"sections":{`)
		for i, k := range sections.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			b.Write(jsout.AppendString(nil, k))
			b.WriteByte(':')
			b.Write(sections.vals[k])
		}
		b.WriteByte('}')
	}
	if len(tools.keys) > 0 {
		b.WriteString(`,"toolsAdded":[`)
		for i, k := range tools.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			b.Write(compactJSON(tools.vals[k]))
		}
		b.WriteByte(']')
	}
	fmt.Fprintf(&b, `,"timestamp":%d}`, ms)
	return b.Bytes(), nil
}

// orderedRaw is a JavaScript Map of JSON values: insertion order, a set
// of an existing key keeps its place.
type orderedRaw struct {
	keys []string
	vals map[string]json.RawMessage
}

func (o *orderedRaw) set(k string, v json.RawMessage) {
	if o.vals == nil {
		o.vals = map[string]json.RawMessage{}
	}
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

func (o *orderedRaw) del(k string) {
	if _, ok := o.vals[k]; !ok {
		return
	}
	delete(o.vals, k)
	for i, x := range o.keys {
		if x == k {
			o.keys = append(o.keys[:i], o.keys[i+1:]...)
			break
		}
	}
}

// merge applies a sections patch in its key order: a string sets, null
// removes.
func (o *orderedRaw) merge(raw json.RawMessage) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return fmt.Errorf("not an object")
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return err
		}
		if k := t.(string); string(v) == "null" {
			o.del(k)
		} else {
			o.set(k, compactJSON(v))
		}
	}
	return nil
}

func toolName(raw json.RawMessage) string {
	var t struct {
		Name string `json:"name"`
	}
	_ = json.Unmarshal(raw, &t)
	return t.Name
}

// contentText is pi-ai's contentText: a string, or the text blocks joined
// by newlines.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &blocks)
	var parts []string
	for _, b := range blocks {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func compactJSON(raw json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}
