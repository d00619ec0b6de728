package lazyre

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
)

func TestNewCompilesOnce(t *testing.T) {
	re := New(`^a+b$`)
	if !re().MatchString("aab") || re().MatchString("ba") {
		t.Fatal("the pattern does not match as compiled")
	}
	if first, second := re(), re(); first != second {
		t.Fatal("each call compiled the pattern again")
	}
	shared := New(`x`)
	var wg sync.WaitGroup
	got := make([]*regexp.Regexp, 8)
	for i := range got {
		wg.Add(1)
		go func() { defer wg.Done(); got[i] = shared() }()
	}
	wg.Wait()
	for _, re := range got {
		if re != got[0] {
			t.Fatal("concurrent first calls compiled the pattern twice")
		}
	}
	bad := New(`(`)
	defer func() {
		if recover() == nil {
			t.Fatal("an invalid pattern did not panic on first use")
		}
	}()
	bad()
}

// The tree's packages whose init every ctxtool process runs.
var roots = []string{"../../../pkg", "../../../cmd"}

// packages parses every non-test Go file under roots, by directory.
func packages(t *testing.T) map[string][]*ast.File {
	t.Helper()
	fset := token.NewFileSet()
	out := map[string][]*ast.File{}
	for _, root := range roots {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			out[filepath.Dir(path)] = append(out[filepath.Dir(path)], f)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(out) < 10 {
		t.Fatalf("found %d packages under %v: run from the repository", len(out), roots)
	}
	return out
}

// initCost names a call that compiles at init, or "".
func initCost(call *ast.CallExpr) string {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return ""
	}
	x, ok := sel.X.(*ast.Ident)
	if !ok {
		return ""
	}
	switch {
	case x.Name == "regexp" && strings.Contains(sel.Sel.Name, "Compile"):
		return "regexp." + sel.Sel.Name
	case x.Name == "template" && sel.Sel.Name == "Must":
		return "template.Must"
	}
	return ""
}

// Package-level vars and init functions run in every ctxtool process:
// a pattern compiled there costs each command, --version included, even
// when it is never matched. Use New (or sync.OnceValue); a function
// literal's body runs later, so it is not looked at.
func TestNoRegexpAtInit(t *testing.T) {
	for dir, files := range packages(t) {
		for _, f := range files {
			var atInit []ast.Node
			for _, d := range f.Decls {
				switch d := d.(type) {
				case *ast.GenDecl:
					if d.Tok == token.VAR {
						atInit = append(atInit, d)
					}
				case *ast.FuncDecl:
					if d.Recv == nil && d.Name.Name == "init" {
						atInit = append(atInit, d.Body)
					}
				}
			}
			for _, n := range atInit {
				ast.Inspect(n, func(n ast.Node) bool {
					switch n := n.(type) {
					case *ast.FuncLit:
						return false
					case *ast.CallExpr:
						if what := initCost(n); what != "" {
							t.Errorf("%s: %s in a package-level var or init of %s: compile it on first use with lazyre.New or sync.OnceValue", dir, what, f.Name.Name)
						}
					}
					return true
				})
			}
		}
	}
}

// A lazy pattern is compiled on first use, so a typo would panic then,
// not at init: every New of the tree is compiled here. Its argument must
// be a constant string (literals, + and the package's string constants).
func TestPatternsCompile(t *testing.T) {
	n := 0
	for dir, files := range packages(t) {
		consts := map[string]ast.Expr{}
		for _, f := range files {
			for _, d := range f.Decls {
				if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.CONST {
					for _, s := range g.Specs {
						vs := s.(*ast.ValueSpec)
						for i, name := range vs.Names {
							if i < len(vs.Values) {
								consts[name.Name] = vs.Values[i]
							}
						}
					}
				}
			}
		}
		var eval func(e ast.Expr) (string, bool)
		eval = func(e ast.Expr) (string, bool) {
			switch e := e.(type) {
			case *ast.BasicLit:
				if e.Kind != token.STRING {
					return "", false
				}
				s, err := strconv.Unquote(e.Value)
				return s, err == nil
			case *ast.BinaryExpr:
				a, ok1 := eval(e.X)
				b, ok2 := eval(e.Y)
				return a + b, ok1 && ok2 && e.Op == token.ADD
			case *ast.ParenExpr:
				return eval(e.X)
			case *ast.Ident:
				if v, ok := consts[e.Name]; ok {
					return eval(v)
				}
			}
			return "", false
		}
		for _, f := range files {
			ast.Inspect(f, func(node ast.Node) bool {
				call, ok := node.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok || sel.Sel.Name != "New" || len(call.Args) != 1 {
					return true
				}
				if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "lazyre" {
					return true
				}
				expr, ok := eval(call.Args[0])
				if !ok {
					t.Errorf("%s: lazyre.New's argument is not a constant string: this test cannot compile it", dir)
					return true
				}
				if _, err := regexp.Compile(expr); err != nil {
					t.Errorf("%s: %v", dir, err)
				}
				n++
				return true
			})
		}
	}
	if n < 50 {
		t.Fatalf("compiled %d lazy patterns; the tree has about 80", n)
	}
	t.Logf("%d lazy patterns compile", n)
}
