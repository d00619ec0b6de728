// Package errwrapcheck finds the fmt.Errorf calls that format an error with
// a verb other than %w, and rewrites them.
//
// Why: an error formatted with %v or %s keeps its text but drops its
// identity, so errors.Is and errors.As — and with them the exit codes that
// pkg/exitcode derives from error types — stop seeing it. %w prints the
// same text and keeps the chain. The test in this package fails on every
// such call in the module; `go run ./internal/errwrapcheck/errwrapfix`
// rewrites those it can (a %v or %s verb without flags in a plain string
// literal) and lists the rest.
package errwrapcheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Finding is one fmt.Errorf argument of type error formatted with a verb
// other than %w.
type Finding struct {
	Pos  token.Position // the argument
	Verb string         // the whole directive, e.g. "%v" or "%-8s"
	// Lit and Offset locate the directive for the fixer: the string
	// literal's position and the directive's byte offset in its source
	// text. Lit is invalid when the format is not one plain literal.
	Lit    token.Position
	Offset int
}

func (f Finding) String() string {
	return fmt.Sprintf("%s: fmt.Errorf formats an error with %s; use %%w so errors.Is/As see it", f.Pos, f.Verb)
}

// Fixable reports whether the fixer can rewrite the directive to %w
// without changing the text: %v or %s with no flags, width or precision,
// in a plain string literal.
func (f Finding) Fixable() bool {
	return f.Lit.IsValid() && (f.Verb == "%v" || f.Verb == "%s")
}

type listed struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	CgoFiles   []string
	Export     string
	Standard   bool
	DepOnly    bool
	ImportMap  map[string]string
}

// Check type-checks the non-test Go files of the packages patterns name
// (as `go list` in dir reads them) and returns the findings, sorted by
// position.
func Check(dir string, patterns ...string) ([]Finding, error) {
	args := append([]string{"list", "-e", "-export", "-deps", "-json=ImportPath,Dir,GoFiles,CgoFiles,Export,Standard,DepOnly,ImportMap"}, patterns...)
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w\n%s", err, stderr.Bytes())
	}
	exports := map[string]string{}
	var mine []listed
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list output: %w", err)
		}
		exports[p.ImportPath] = p.Export
		if !p.Standard && !p.DepOnly && len(p.CgoFiles) == 0 {
			mine = append(mine, p)
		}
	}
	fset := token.NewFileSet()
	var findings []Finding
	for _, p := range mine {
		fs, err := checkPackage(fset, p, exports)
		if err != nil {
			return nil, err
		}
		findings = append(findings, fs...)
	}
	sort.Slice(findings, func(i, j int) bool {
		a, b := findings[i].Pos, findings[j].Pos
		if a.Filename != b.Filename {
			return a.Filename < b.Filename
		}
		return a.Offset < b.Offset
	})
	return findings, nil
}

func checkPackage(fset *token.FileSet, p listed, exports map[string]string) ([]Finding, error) {
	var files []*ast.File
	for _, name := range p.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	lookup := func(path string) (io.ReadCloser, error) {
		if real, ok := p.ImportMap[path]; ok {
			path = real
		}
		file := exports[path]
		if file == "" {
			return nil, fmt.Errorf("no export data for %s (does it build?)", path)
		}
		return os.Open(file)
	}
	conf := types.Config{Importer: importer.ForCompiler(fset, "gc", lookup)}
	info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}, Uses: map[*ast.Ident]types.Object{}}
	if _, err := conf.Check(p.ImportPath, fset, files, info); err != nil {
		return nil, fmt.Errorf("type-check %s: %w", p.ImportPath, err)
	}
	errType := types.Universe.Lookup("error").Type().Underlying().(*types.Interface)
	var findings []Finding
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || !isErrorf(info, call) || len(call.Args) == 0 {
				return true
			}
			tv := info.Types[call.Args[0]]
			if tv.Value == nil {
				return true // not a constant format: nothing to check
			}
			format, _ := strconv.Unquote(tv.Value.ExactString())
			dirs, ok := directives(format)
			if !ok {
				return true // explicit argument indexes: out of scope
			}
			lit, _ := call.Args[0].(*ast.BasicLit)
			var litDirs []directive
			if lit != nil {
				litDirs, _ = directives(lit.Value) // same directives: escapes never hold a '%'
			}
			for i, d := range dirs {
				if d.verb == 'w' || d.arg+1 >= len(call.Args) {
					continue
				}
				arg := call.Args[d.arg+1]
				t := info.Types[arg].Type
				if t == nil || !types.Implements(t, errType) {
					continue
				}
				fd := Finding{Pos: fset.Position(arg.Pos()), Verb: d.text}
				if lit != nil && len(litDirs) == len(dirs) && litDirs[i].text == d.text {
					fd.Lit, fd.Offset = fset.Position(lit.Pos()), litDirs[i].offset
				}
				findings = append(findings, fd)
			}
			return true
		})
	}
	return findings, nil
}

// isErrorf reports whether call calls fmt.Errorf.
func isErrorf(info *types.Info, call *ast.CallExpr) bool {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	fn, ok := info.Uses[sel.Sel].(*types.Func)
	return ok && fn.Pkg() != nil && fn.Pkg().Path() == "fmt" && fn.Name() == "Errorf"
}

// directive is one formatting directive of a format string.
type directive struct {
	text   string // "%-8.3v"
	verb   rune
	arg    int // the operand it formats (0-based, after the format)
	offset int // byte offset of its '%' in the format
}

// directives parses a format string the way fmt does, for the directives
// and the operand each one consumes (a '*' width or precision takes one
// too). ok is false for formats with explicit argument indexes ("%[2]v").
func directives(format string) (out []directive, ok bool) {
	arg := 0
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		start := i
		i++
		if i < len(format) && format[i] == '%' {
			continue
		}
		for i < len(format) && strings.IndexByte("+-# 0", format[i]) >= 0 {
			i++
		}
		for pass := 0; pass < 2; pass++ { // width, then precision
			if pass == 1 {
				if i >= len(format) || format[i] != '.' {
					break
				}
				i++
			}
			if i < len(format) && format[i] == '*' {
				arg++
				i++
				continue
			}
			for i < len(format) && format[i] >= '0' && format[i] <= '9' {
				i++
			}
		}
		if i >= len(format) {
			break
		}
		if format[i] == '[' {
			return nil, false
		}
		out = append(out, directive{text: format[start : i+1], verb: rune(format[i]), arg: arg, offset: start})
		arg++
	}
	return out, true
}

// Fix rewrites the fixable findings' directives to %w in their files and
// returns the findings it could not fix.
func Fix(findings []Finding) (left []Finding, err error) {
	byFile := map[string][]Finding{}
	for _, f := range findings {
		if !f.Fixable() {
			left = append(left, f)
			continue
		}
		byFile[f.Lit.Filename] = append(byFile[f.Lit.Filename], f)
	}
	for name, fs := range byFile {
		src, err := os.ReadFile(name)
		if err != nil {
			return nil, err
		}
		for _, f := range fs {
			at := f.Lit.Offset + f.Offset
			if !bytes.HasPrefix(src[at:], []byte(f.Verb)) {
				return nil, fmt.Errorf("%s: expected %s at byte %d; the file changed since the check", f.Pos, f.Verb, at)
			}
			src[at+1] = 'w' // %v and %s are two bytes, as %w is
		}
		fi, err := os.Stat(name)
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(name, src, fi.Mode().Perm()); err != nil {
			return nil, err
		}
	}
	return left, nil
}
