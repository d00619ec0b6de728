// Package secrets finds credentials in transcript text and redacts them.
//
// It is the one detector of ctxtool: lint reports what Scan finds, and
// every place where text leaves a session (the recall index, search and
// budget output, summaries and the summariser's request, checkpoints,
// resume text, memory-flush notes, scrub) replaces what Find finds with a
// marker, [secret:<kind>:<fingerprint>]. The fingerprint is the one lint
// prints (the first 8 hex digits of the value's sha256), so a lint finding,
// a redacted summary and an index row name the same secret the same way,
// and recall can find the lines that held it by searching the fingerprint.
package secrets

import (
	"bytes"
	"reflect"
	"strings"
	"unsafe"
)

// Span is one credential at b[Start:End] of the text given to Find.
type Span struct {
	Start, End  int
	Kind        string // lint's wording: "GitHub token"
	Fingerprint string
}

// Marker is what replaces the credential.
func (s Span) Marker() string { return Marker(s.Kind, s.Fingerprint) }

// Marker is the redaction of a secret of kind with fingerprint fp:
// "[secret:github-token:1a2b3c4d]". It holds nothing the detector finds
// again, so redacting twice changes nothing.
func Marker(kind, fp string) string { return "[secret:" + Slug(kind) + ":" + fp + "]" }

// Slug is a kind as one lower-case word of letters, digits and dashes:
// "API key (sk-…)" becomes "api-key-sk".
func Slug(kind string) string {
	var b strings.Builder
	dash := false
	for _, c := range strings.ToLower(kind) {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(c)
			dash = false
		} else {
			dash = true
		}
	}
	return b.String()
}

// Find returns the credentials in b in order, without overlaps. b is read,
// never changed or kept.
func Find(b []byte) []Span {
	if len(b) < minRun {
		return nil
	}
	s := scanner{data: b, limit: len(b), eof: true}
	s.run(false)
	var out []Span
	end := 0
	for _, f := range s.found {
		if f.pos < end {
			continue // inside a credential already found (a key block)
		}
		out = append(out, Span{Start: f.pos, End: f.end, Kind: f.kind, Fingerprint: Fingerprint(b[f.pos:f.end])})
		end = f.end
	}
	return out
}

// Redact returns s with every credential replaced by its marker (s itself,
// not copied, when there is none).
func Redact(s string) string {
	if len(s) < minRun {
		return s
	}
	// The scan only reads: look at the string's bytes in place rather than
	// copying a tool result of hundreds of megabytes to find nothing.
	b := unsafe.Slice(unsafe.StringData(s), len(s))
	spans := Find(b)
	if len(spans) == 0 {
		return s
	}
	return string(replace(b, spans))
}

// RedactBytes is Redact for bytes: b itself when it holds no credential,
// else a new slice.
func RedactBytes(b []byte) []byte {
	spans := Find(b)
	if len(spans) == 0 {
		return b
	}
	return replace(b, spans)
}

// RedactJSON redacts the raw bytes of a JSON document (one JSONL line) and
// keeps it valid JSON: a marker never takes in a quote or half an escape.
// The fingerprints are those of lint, which scans the same raw bytes.
func RedactJSON(b []byte) []byte {
	spans := Find(b)
	if len(spans) == 0 {
		return b
	}
	for i := range spans {
		spans[i].End = jsonSafeEnd(b, spans[i].Start, spans[i].End)
	}
	return replace(b, spans)
}

// jsonSafeEnd shortens b[st:en] so that it stays inside one JSON string: it
// stops before an unescaped quote and never ends on an escape's backslash.
func jsonSafeEnd(b []byte, st, en int) int {
	for i := st; i < en; i++ {
		switch b[i] {
		case '\\':
			i++ // the escaped byte
		case '"':
			en = i
		}
	}
	// An odd run of trailing backslashes ends on an escape's first half.
	n := 0
	for i := en - 1; i >= st && b[i] == '\\'; i-- {
		n++
	}
	if n%2 == 1 {
		en--
	}
	return max(en, st)
}

// replace writes b with spans (in order, not overlapping) replaced by their
// markers.
func replace(b []byte, spans []Span) []byte {
	var out bytes.Buffer
	out.Grow(len(b))
	at := 0
	for _, sp := range spans {
		if sp.End <= sp.Start {
			continue
		}
		out.Write(b[at:sp.Start])
		out.WriteString(sp.Marker())
		at = sp.End
	}
	out.Write(b[at:])
	return out.Bytes()
}

// Kinds lists the kinds the detector reports, in lint's wording.
func Kinds() []string {
	seen := map[string]bool{}
	var out []string
	add := func(k string) {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	for _, k := range prefixKinds {
		add(k.kind)
	}
	for _, k := range []string{"API key (sk-…)", "AWS access key id", "AWS secret access key", "JSON Web Token", "private key", "bearer token"} {
		add(k)
	}
	return out
}

// RedactFields redacts, in place, every string reachable from v (a
// pointer to a struct, slice or map): the fields of a checkpoint or a
// note before it is written. Map keys are left as they are.
func RedactFields(v any) {
	redactValue(reflect.ValueOf(v))
}

func redactValue(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			redactValue(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				redactValue(v.Field(i))
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			redactValue(v.Index(i))
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			e := v.MapIndex(k)
			switch e.Kind() {
			case reflect.String:
				if r := Redact(e.String()); r != e.String() {
					v.SetMapIndex(k, reflect.ValueOf(r).Convert(e.Type()))
				}
			case reflect.Interface, reflect.Pointer, reflect.Map, reflect.Slice:
				redactValue(e)
			default:
				c := reflect.New(e.Type()).Elem()
				c.Set(e)
				redactValue(c)
				v.SetMapIndex(k, c)
			}
		}
	case reflect.String:
		if v.CanSet() {
			if r := Redact(v.String()); r != v.String() {
				v.SetString(r)
			}
		}
	}
}
