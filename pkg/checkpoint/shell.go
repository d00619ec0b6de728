package checkpoint

import (
	"path"
	"strings"
)

// Agents write files through their shell tools as often as through their
// edit tools: Codex's exec_command (`printf … > notes.txt`), its older
// shell tool (["bash","-lc","apply_patch <<'PATCH' …"]), pi's and Claude
// Code's bash. A call's path arguments name none of those files, so the
// checkpoint's files_modified missed them. shellWrites reads the common
// write forms out of a command — redirections (>, >>, &>), tee, sed -i,
// the destination of cp and mv, and apply_patch's file headers — and
// nothing else: only literal words count (a word with $, `, globs or ~ is
// left out, as is /dev/…), so what it names is what the command wrote.

// shellTools are the tools whose command is a shell script (lower case).
var shellTools = map[string]bool{
	"bash": true, "shell": true, "exec_command": true, "shell_command": true,
	"local_shell": true, "container.exec": true,
}

// maxScript bounds the script read; maxWrites the files named per call.
const (
	maxScript = 64 << 10
	maxWrites = 50
)

// shellWrites is the files a shell script writes, by the forms above.
func shellWrites(script string) []string {
	if len(script) > maxScript || !writeHint(script) {
		return nil
	}
	var w writes
	w.script(script, 0)
	return w.paths
}

// writeHint reports whether script may hold a write form (most commands
// hold none and are not parsed).
func writeHint(s string) bool {
	return strings.Contains(s, ">") || strings.Contains(s, "tee") || strings.Contains(s, "sed") ||
		strings.Contains(s, "cp") || strings.Contains(s, "mv") || strings.Contains(s, "*** Begin Patch")
}

// argvWrites is shellWrites of a command given as argv (Codex's shell
// tool: ["bash","-lc",script] or ["apply_patch",patch]).
func argvWrites(argv []string) []string {
	n := 0
	for _, a := range argv {
		n += len(a)
	}
	if n > maxScript {
		return nil
	}
	var w writes
	words := make([]word, len(argv))
	for i, a := range argv {
		words[i] = word{text: a, literal: true}
	}
	w.command(words, 0)
	return w.paths
}

// patchWrites is the files an apply_patch patch adds, updates, deletes or
// moves to.
func patchWrites(patch string) []string {
	if len(patch) > 4*maxScript || !strings.Contains(patch, "*** Begin Patch") {
		return nil
	}
	var w writes
	w.patch(patch)
	return w.paths
}

// writes collects the files named, each once. dir is where a cd in the
// script went (relative paths are joined to it); lost: a cd to where the
// words do not say, after which relative paths are left out.
type writes struct {
	paths []string
	dir   string
	lost  bool
}

func (w *writes) add(p string) {
	if p == "" || len(w.paths) >= maxWrites || strings.HasPrefix(p, "/dev/") || strings.HasPrefix(p, "/proc/") ||
		strings.ContainsAny(p, "\n\t") || len(p) > 500 {
		return
	}
	if !path.IsAbs(p) {
		if w.lost {
			return
		}
		p = path.Join(w.dir, p)
	}
	p = path.Clean(p)
	for _, q := range w.paths {
		if q == p {
			return
		}
	}
	w.paths = append(w.paths, p)
}

func (w *writes) patch(p string) {
	for _, line := range strings.Split(p, "\n") {
		line = strings.TrimRight(line, "\r ")
		for _, h := range []string{"*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: "} {
			if strings.HasPrefix(line, h) {
				w.add(strings.TrimSpace(line[len(h):]))
			}
		}
	}
}

// word is a shell word; literal: no expansion ($, `, glob, ~) in it.
type word struct {
	text    string
	literal bool
	op      string // an operator token (";", "|", "&&", …, ">", ">>") instead of a word
}

// script parses a script's simple commands (depth: nested bash -c).
func (w *writes) script(s string, depth int) {
	if depth > 3 || strings.HasPrefix(strings.TrimSpace(s), "*** Begin Patch") {
		return // a patch run as a script (a wild Codex call) is no shell and fails
	}
	if strings.Contains(s, "*** Begin Patch") && (strings.Contains(s, "apply_patch") || strings.Contains(s, "applypatch")) {
		w.patch(s) // apply_patch <<'PATCH' … : the patch is the here-document
	}
	var cmd []word
	for _, t := range lex(s) {
		if t.op != "" && !isRedirect(t.op) && t.op != "<" {
			w.command(cmd, depth)
			cmd = cmd[:0]
			continue
		}
		cmd = append(cmd, t)
	}
	w.command(cmd, depth)
}

func isRedirect(op string) bool { return op == ">" || op == ">>" }

// command reads one simple command: its output redirections, then what
// the command itself writes.
func (w *writes) command(ws []word, depth int) {
	var args []word
	for i := 0; i < len(ws); i++ {
		if isRedirect(ws[i].op) || ws[i].op == "<" {
			if isRedirect(ws[i].op) && i+1 < len(ws) && ws[i+1].op == "" && ws[i+1].literal {
				w.add(ws[i+1].text)
			}
			i++
			continue
		}
		args = append(args, ws[i])
	}
	// leading assignments (X=1 cmd) and keywords (for …; do cmd; done)
	for len(args) > 0 && args[0].literal && (keywords[args[0].text] ||
		strings.Contains(args[0].text, "=") && !strings.HasPrefix(args[0].text, "=")) {
		args = args[1:]
	}
	if len(args) == 0 || !args[0].literal {
		return
	}
	name, rest := path.Base(args[0].text), args[1:]
	switch name {
	case "cd", "pushd":
		switch {
		case len(rest) == 1 && rest[0].literal && rest[0].text != "-" && rest[0].text != "":
			w.dir = path.Join(w.dir, rest[0].text)
			if path.IsAbs(rest[0].text) {
				w.dir, w.lost = path.Clean(rest[0].text), false
			}
		default:
			w.lost = true // cd, cd -, cd "$X": somewhere the words do not say
		}
	case "bash", "sh", "zsh", "dash":
		for i, a := range rest {
			if !strings.HasPrefix(a.text, "-") || strings.HasPrefix(a.text, "--") {
				break
			}
			if strings.Contains(a.text, "c") && i+1 < len(rest) {
				w.script(rest[i+1].text, depth+1)
				break
			}
		}
	case "apply_patch", "applypatch":
		if len(rest) > 0 {
			w.patch(rest[0].text)
		}
	case "tee":
		for _, a := range rest {
			if a.literal && !strings.HasPrefix(a.text, "-") {
				w.add(a.text)
			}
		}
	case "sed", "gsed":
		w.sed(rest)
	case "cp", "mv":
		w.copyDest(rest)
	}
}

// keywords start a command without being its name.
var keywords = map[string]bool{"do": true, "then": true, "else": true, "elif": true, "if": true,
	"while": true, "until": true, "!": true, "{": true, "time": true}

// sed names the files of an in-place sed (-i, -i.bak, -ni, --in-place).
func (w *writes) sed(args []word) {
	inPlace, scriptGiven := false, false
	var files []word
	for i := 0; i < len(args); i++ {
		a := args[i].text
		switch {
		case a == "-e" || a == "-f" || a == "--expression" || a == "--file":
			scriptGiven = true
			i++
		case strings.HasPrefix(a, "--expression=") || strings.HasPrefix(a, "--file="):
			scriptGiven = true
		case strings.HasPrefix(a, "--in-place"):
			inPlace = true
		case a == "-i" && i+1 < len(args) && args[i+1].text == "":
			inPlace = true // BSD sed: -i '' (no backup)
			i++
		case strings.HasPrefix(a, "--"):
		case strings.HasPrefix(a, "-") && len(a) > 1:
			// flags before i are sed's one-letter flags; after it, a suffix
			if j := strings.IndexByte(a, 'i'); j > 0 && strings.Trim(a[1:j], "nrEsuz") == "" {
				inPlace = true
			}
			if k := strings.IndexAny(a, "ef"); k > 0 && !strings.Contains(a[1:k], "i") {
				scriptGiven = true // -ne 's/…/' : the script follows
				i++
			}
		default:
			files = append(files, args[i])
		}
	}
	if !inPlace {
		return
	}
	if !scriptGiven && len(files) > 0 {
		files = files[1:]
	}
	for _, f := range files {
		if f.literal {
			w.add(f.text)
		}
	}
}

// copyDest names the destination of cp or mv: -t DIR, else the last
// operand (joined with each source's name when it is a directory — more
// than one source, or a trailing /).
func (w *writes) copyDest(args []word) {
	var ops []word
	target := ""
	for i := 0; i < len(args); i++ {
		a := args[i].text
		switch {
		case a == "-t" || a == "--target-directory":
			if i+1 < len(args) && args[i+1].literal {
				target = args[i+1].text
			}
			i++
		case strings.HasPrefix(a, "--target-directory="):
			target = strings.TrimPrefix(a, "--target-directory=")
		case a == "-S" || a == "--suffix":
			i++
		case strings.HasPrefix(a, "-") && len(a) > 1:
		default:
			ops = append(ops, args[i])
		}
	}
	if target == "" {
		if len(ops) < 2 || !ops[len(ops)-1].literal {
			return
		}
		target, ops = ops[len(ops)-1].text, ops[:len(ops)-1]
		dirLike := strings.HasSuffix(target, "/") || path.Base(target) == "." || path.Base(target) == ".."
		if len(ops) == 1 && !dirLike {
			w.add(target)
			return
		}
	}
	for _, src := range ops {
		if src.literal {
			w.add(path.Join(target, path.Base(src.text)))
		}
	}
}

// lex splits a POSIX shell script into words and operators: quotes and
// backslashes as the shell reads them, comments and here-document bodies
// skipped, fd numbers before a redirection dropped, fd duplications
// (2>&1) and input redirections left out.
func lex(s string) []word {
	var out []word
	var cur strings.Builder
	inWord, literal := false, true
	var heredocs []string // delimiters whose bodies start at the next newline
	end := func() {
		if inWord {
			out = append(out, word{text: cur.String(), literal: literal})
		}
		cur.Reset()
		inWord, literal = false, true
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			i++
			if s[i] != '\n' {
				cur.WriteByte(s[i])
				inWord = true
			}
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return out // unterminated: nothing more is sure
			}
			cur.WriteString(s[i+1 : i+1+j])
			inWord, i = true, i+1+j
		case c == '"':
			j := i + 1
			for ; j < len(s) && s[j] != '"'; j++ {
				switch s[j] {
				case '\\':
					if j+1 < len(s) && strings.IndexByte("\"\\$`\n", s[j+1]) >= 0 {
						j++
						if s[j] == '\n' {
							continue
						}
					}
				case '$', '`':
					literal = false
				}
				cur.WriteByte(s[j])
			}
			if j >= len(s) {
				return out
			}
			inWord, i = true, j
		case c == '#' && !inWord:
			for i < len(s) && s[i] != '\n' {
				i++
			}
			i--
		case c == ' ' || c == '\t' || c == '\r':
			end()
		case c == '\n':
			end()
			out = append(out, word{op: "\n"})
			if len(heredocs) > 0 {
				pos := i + 1
				for _, d := range heredocs {
					pos = skipHeredoc(s, pos, d) + 1
				}
				i = pos - 2 // the next byte read is the delimiter line's newline
				heredocs = heredocs[:0]
			}
		case c == '>' || c == '<':
			fd := inWord && literal && isDigits(cur.String())
			if fd {
				cur.Reset()
				inWord = false
			}
			end()
			op := string(c)
			if i+1 < len(s) && (s[i+1] == c || s[i+1] == '|' || s[i+1] == '&' || (c == '<' && s[i+1] == '>')) {
				i++
				op += string(s[i])
			}
			switch {
			case op == ">&" || op == "<&":
				// 2>&1, >&2: a duplication (>&file is rare and left out)
				for i+1 < len(s) && (isDigitByte(s[i+1]) || s[i+1] == '-') {
					i++
				}
			case op == ">" || op == ">|":
				out = append(out, word{op: ">"})
			case op == ">>":
				out = append(out, word{op: ">>"})
			case op == "<<":
				if i+1 < len(s) && s[i+1] == '-' {
					i++
				}
				if i+1 < len(s) && s[i+1] == '<' { // <<< here-string
					i++
					out = append(out, word{op: "<"})
					continue
				}
				for i+1 < len(s) && (s[i+1] == ' ' || s[i+1] == '\t') {
					i++
				}
				j := i + 1
				for j < len(s) && strings.IndexByte(" \t\n;&|<>()", s[j]) < 0 {
					j++
				}
				heredocs = append(heredocs, strings.Trim(s[i+1:j], `'"\`))
				i = j - 1
			default:
				out = append(out, word{op: "<"}) // input: its word is read, not written
			}
		case c == '&' && i+1 < len(s) && s[i+1] == '>':
			end()
			i++
			if i+1 < len(s) && s[i+1] == '>' {
				i++
			}
			out = append(out, word{op: ">"})
		case strings.IndexByte(";&|()", c) >= 0:
			end()
			op := string(c)
			if i+1 < len(s) && (c == '&' || c == '|' || c == ';') && s[i+1] == c {
				i++
				op += string(c)
			}
			out = append(out, word{op: op})
		default:
			if strings.IndexByte("$`*?[~{", c) >= 0 {
				literal = false
			}
			cur.WriteByte(c)
			inWord = true
		}
	}
	end()
	return out
}

// skipHeredoc is the offset after the here-document body starting at
// from, ended by a line that is delim (tabs before it allowed, for <<-).
func skipHeredoc(s string, from int, delim string) int {
	for i := from; i < len(s); {
		j := strings.IndexByte(s[i:], '\n')
		line := s[i:]
		if j >= 0 {
			line = s[i : i+j]
		}
		if strings.TrimLeft(strings.TrimRight(line, "\r"), "\t") == delim {
			if j < 0 {
				return len(s)
			}
			return i + j
		}
		if j < 0 {
			return len(s)
		}
		i += j + 1
	}
	return len(s)
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigitByte(s[i]) {
			return false
		}
	}
	return s != ""
}

func isDigitByte(c byte) bool { return c >= '0' && c <= '9' }
