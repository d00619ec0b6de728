package config

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// literalSets returns the places in a Go file that list strings as a set,
// each with its strings: a composite literal's elements or map keys
// (string literals, or string constants of the package: consts), one case
// clause's values, and the strings one if or one tagless case compares
// with. A switch whose cases each name one value is a dispatch, not a set.
func literalSets(f *ast.File, consts map[string]string) map[token.Pos][]string {
	sets := map[token.Pos][]string{}
	str := func(e ast.Expr, constsToo bool) (string, bool) {
		switch e := e.(type) {
		case *ast.BasicLit:
			if e.Kind == token.STRING {
				s, err := strconv.Unquote(e.Value)
				return s, err == nil
			}
		case *ast.Ident:
			s, ok := consts[e.Name]
			return s, ok && constsToo
		}
		return "", false
	}
	compared := func(e ast.Expr) []string {
		var out []string
		ast.Inspect(e, func(n ast.Node) bool {
			if b, ok := n.(*ast.BinaryExpr); ok && (b.Op == token.EQL || b.Op == token.NEQ) {
				for _, side := range []ast.Expr{b.X, b.Y} {
					if s, ok := str(side, false); ok {
						out = append(out, s)
					}
				}
			}
			return true
		})
		return out
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CompositeLit:
			for _, el := range n.Elts {
				if kv, ok := el.(*ast.KeyValueExpr); ok {
					el = kv.Key
				}
				if s, ok := str(el, true); ok {
					sets[n.Pos()] = append(sets[n.Pos()], s)
				}
			}
		case *ast.SwitchStmt:
			for _, st := range n.Body.List {
				c := st.(*ast.CaseClause)
				for _, e := range c.List {
					if n.Tag == nil {
						sets[c.Pos()] = append(sets[c.Pos()], compared(e)...)
					} else if s, ok := str(e, false); ok {
						sets[c.Pos()] = append(sets[c.Pos()], s)
					}
				}
			}
		case *ast.IfStmt:
			sets[n.Pos()] = append(sets[n.Pos()], compared(n.Cond)...)
		}
		return true
	})
	return sets
}

// stringConsts are the package-level string constants of files.
func stringConsts(files []*ast.File) map[string]string {
	m := map[string]string{}
	for _, f := range files {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, sp := range g.Specs {
				vs := sp.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if i < len(vs.Values) {
						if b, ok := vs.Values[i].(*ast.BasicLit); ok && b.Kind == token.STRING {
							m[name.Name], _ = strconv.Unquote(b.Value)
						}
					}
				}
			}
		}
	}
	return m
}

// The key table is the one source of enums: no Go file outside it lists
// more than half (and at least two) of a key's values as a set (a slice or map, one case of a
// switch, a chain of comparisons). Flags and config values are validated
// from Key.Enum, completion offers it, and packages name single values
// only (a default, one branch of a dispatch).
func TestNoEnumIsListedTwice(t *testing.T) {
	root := filepath.Join("..", "..")
	// Lists that stay, and why. Each must still be found (so the list
	// shrinks when one goes).
	known := map[string]string{
		"pkg/estimate/estimate.go estimate.tokenizer": "estimate.Methods() also serves the sessions command's own --tokenizer flag (default heuristic, not the key's) and five commands' checks",
	}
	fset := token.NewFileSet()
	byDir := map[string][]*ast.File{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (d.Name() == "node_modules" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		byDir[filepath.Dir(path)] = append(byDir[filepath.Dir(path)], f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	keysFile := filepath.Join(root, "pkg", "config", "keys.go")
	seen := map[string]bool{}
	for _, files := range byDir {
		consts := stringConsts(files)
		for _, f := range files {
			file := fset.Position(f.Pos()).Filename
			if file == keysFile {
				continue
			}
			rel, _ := filepath.Rel(root, file)
			for pos, strs := range literalSets(f, consts) {
				for _, k := range keys {
					var hit []string
					for _, v := range k.Enum {
						if slices.Contains(strs, v) {
							hit = append(hit, v)
						}
					}
					// two of six tokenizer values are the tokenizer
					// package's encodings, another domain: a set re-lists
					// an enum when it holds more than half of it
					if len(hit) < 2 || 2*len(hit) <= len(k.Enum) {
						continue
					}
					id := filepath.ToSlash(rel) + " " + k.Name
					if _, ok := known[id]; ok {
						seen[id] = true
						continue
					}
					t.Errorf("%s lists %s's values %q again: validate with the key table (config.CheckValue, CheckFlags, Load), complete with Key.Enum",
						fmt.Sprintf("%s:%d", filepath.ToSlash(rel), fset.Position(pos).Line), k.Name, hit)
				}
			}
		}
	}
	for id := range known {
		if !seen[id] {
			t.Errorf("%s no longer lists the enum: remove it from known", id)
		}
	}
}
