package policy

import (
	"path"
	"strings"
)

// This file takes a shell command line apart well enough for policy: into
// simple commands (split on ; & && | || newlines and parentheses, outside
// quotes), plus the bodies of $(...), `...`, <(...) and sh -c '...', so that
// "cd x && rm -rf /" or "bash -c 'rm -rf ~'" cannot hide a command behind
// an innocent first word. It is not a shell: it errs towards finding more
// commands, never fewer.

// segment is one simple command of a command line.
type segment struct {
	text  string // as written, whitespace collapsed
	pipe  bool   // its output is piped into the next segment
	depth int    // 0 at the top; more inside substitutions and sh -c scripts
}

// maxShellDepth bounds the recursion into substitutions and sh -c scripts.
const maxShellDepth = 4

// splitCommands returns the simple commands of line, in order, with the
// commands nested in substitutions and sh -c scripts after the command that
// holds them.
func splitCommands(line string) []segment {
	return splitDepth(line, 0)
}

func splitDepth(line string, depth int) []segment {
	var out []segment
	var cur strings.Builder
	var subs []string
	flush := func(pipe bool) {
		t := collapse(cur.String())
		cur.Reset()
		if t != "" {
			out = append(out, segment{text: t, pipe: pipe, depth: depth})
		}
		for _, s := range subs {
			if depth < maxShellDepth {
				out = append(out, splitDepth(s, depth+1)...)
			}
		}
		subs = subs[:0]
	}
	var quote byte
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote == '\'':
			cur.WriteByte(c)
			if c == '\'' {
				quote = 0
			}
			continue
		case c == '\\' && i+1 < len(line):
			cur.WriteByte(c)
			cur.WriteByte(line[i+1])
			i++
			continue
		case (c == '$' || c == '<' || c == '>') && i+1 < len(line) && line[i+1] == '(':
			end, body := closeParen(line, i+2)
			cur.WriteString(line[i:end])
			subs = append(subs, body)
			i = end - 1
			continue
		case c == '`':
			end := strings.IndexByte(line[i+1:], '`')
			if end < 0 {
				end = len(line) - i - 1
			}
			cur.WriteString(line[i:min(len(line), i+end+2)])
			subs = append(subs, line[i+1:i+1+end])
			i += end + 1
			continue
		case quote == '"':
			cur.WriteByte(c)
			if c == '"' {
				quote = 0
			}
			continue
		case c == '\'' || c == '"':
			quote = c
			cur.WriteByte(c)
			continue
		}
		switch c {
		case ';', '\n', '(', ')':
			flush(false)
		case '&':
			// 2>&1, &> and >& are redirections, not separators.
			if (i > 0 && line[i-1] == '>') || (i+1 < len(line) && line[i+1] == '>') {
				cur.WriteByte(c)
				continue
			}
			if i+1 < len(line) && line[i+1] == '&' {
				i++
			}
			flush(false)
		case '|':
			if i > 0 && line[i-1] == '>' { // >| clobbers, it is a redirection
				cur.WriteByte(c)
				continue
			}
			pipe := true
			if i+1 < len(line) && line[i+1] == '|' {
				pipe = false
				i++
			} else if i+1 < len(line) && line[i+1] == '&' {
				i++
			}
			flush(pipe)
		default:
			cur.WriteByte(c)
		}
	}
	flush(false)
	// sh -c 'script', eval ...: the script is a command line of its own.
	if depth < maxShellDepth {
		var more []segment
		for _, s := range out {
			more = append(more, s)
			if s.depth != depth {
				continue // nested: expanded by the call that made it
			}
			if script, ok := shellScript(normalizeWords(shellWords(s.text))); ok {
				more = append(more, splitDepth(script, depth+1)...)
			}
		}
		out = more
	}
	return out
}

// closeParen finds the parenthesis closing the one opened just before
// start. It returns the index past it (len(s) when there is none) and the
// text between.
func closeParen(s string, start int) (end int, body string) {
	depth := 1
	var quote byte
	for i := start; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\\':
			i++
		case c == '\'' || c == '"':
			quote = c
		case c == '(':
			depth++
		case c == ')':
			depth--
			if depth == 0 {
				return i + 1, s[start:i]
			}
		}
	}
	return len(s), s[start:]
}

// collapse trims s and turns every run of white space into one space.
func collapse(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// shellWords splits a simple command into words the way a shell would,
// removing quotes and backslashes. Substitutions stay inside their word.
func shellWords(s string) []string {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote == '\'':
			if c == '\'' {
				quote = 0
			} else {
				cur.WriteByte(c)
			}
		case quote == '"':
			switch {
			case c == '"':
				quote = 0
			case c == '\\' && i+1 < len(s) && strings.IndexByte(`"\$`+"`", s[i+1]) >= 0:
				i++
				cur.WriteByte(s[i])
			default:
				cur.WriteByte(c)
			}
		case c == '\'' || c == '"':
			quote, inWord = c, true
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			inWord = true
		case c == '$' && i+1 < len(s) && s[i+1] == '(':
			end, _ := closeParen(s, i+2)
			cur.WriteString(s[i:end])
			i, inWord = end-1, true
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// wrappers run the command that follows them; the value is the set of their
// options that take an argument.
var wrappers = map[string]string{
	"sudo": "ugCDhpRrTt", "doas": "uC", "env": "uCPS", "nohup": "", "time": "", "exec": "a",
	"command": "", "builtin": "", "nice": "n", "ionice": "cnpP", "stdbuf": "ioe", "timeout": "sk",
	"xargs": "adEeILnPs", "chroot": "", "caffeinate": "tw", "busybox": "", "unbuffer": "", "setsid": "",
	"strace": "eoOpsSuU", "torsocks": "", "proxychains": "f",
}

// keywords open a compound command; the simple command follows them.
var keywords = map[string]bool{
	"if": true, "then": true, "else": true, "elif": true, "do": true, "while": true, "until": true,
	"!": true, "{": true, "}": true, "fi": true, "done": true,
}

// normalizeWords strips what runs a command without being it: variable
// assignments, keywords and wrappers like sudo, env, nohup and timeout, so
// that "sudo -u root FOO=1 rm -rf /" is seen as "rm -rf /".
func normalizeWords(w []string) []string {
	for len(w) > 0 {
		first := w[0]
		switch {
		case keywords[first]:
			w = w[1:]
			continue
		case isAssignment(first):
			w = w[1:]
			continue
		}
		argOpts, ok := wrappers[path.Base(first)]
		if !ok {
			break
		}
		name := path.Base(first)
		w = w[1:]
		for len(w) > 0 && strings.HasPrefix(w[0], "-") && w[0] != "-" {
			opt := w[0]
			w = w[1:]
			if opt == "--" {
				break
			}
			// -u root: the option's argument is the next word.
			if !strings.HasPrefix(opt, "--") && len(opt) == 2 && strings.IndexByte(argOpts, opt[1]) >= 0 && len(w) > 0 {
				w = w[1:]
			}
		}
		if name == "env" {
			for len(w) > 0 && isAssignment(w[0]) {
				w = w[1:]
			}
		}
		if name == "timeout" && len(w) > 0 { // timeout DURATION CMD
			w = w[1:]
		}
		if name == "chroot" && len(w) > 0 { // chroot DIR CMD
			w = w[1:]
		}
	}
	return w
}

func isAssignment(w string) bool {
	eq := strings.IndexByte(w, '=')
	if eq <= 0 {
		return false
	}
	for i := 0; i < eq; i++ {
		c := w[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// shells are the programs whose -c argument is a command line, and which
// run what is piped into them.
var shells = map[string]bool{"sh": true, "bash": true, "zsh": true, "dash": true, "ksh": true, "fish": true, "ash": true, "mksh": true, "csh": true, "tcsh": true}

// shellScript returns the script of "sh -c SCRIPT" (any flag cluster holding
// c, like -lc) or the arguments of eval.
func shellScript(w []string) (string, bool) {
	if len(w) == 0 {
		return "", false
	}
	name := path.Base(w[0])
	if name == "eval" && len(w) > 1 {
		return strings.Join(w[1:], " "), true
	}
	if !shells[name] {
		return "", false
	}
	for i := 1; i < len(w); i++ {
		a := w[i]
		if !strings.HasPrefix(a, "-") || strings.HasPrefix(a, "--") {
			return "", false
		}
		if strings.Contains(a, "c") && i+1 < len(w) {
			return w[i+1], true
		}
	}
	return "", false
}

// hasOutputRedirect reports whether a simple command writes to a file with
// >, >> or &> outside quotes. Redirections to /dev/null and between file
// descriptors (2>&1) do not count.
func hasOutputRedirect(s string) bool {
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
			continue
		case c == '\\':
			i++
			continue
		case c == '\'' || c == '"':
			quote = c
			continue
		case c != '>':
			continue
		}
		if i+1 < len(s) && s[i+1] == '(' { // >(...) is a substitution
			continue
		}
		j := i + 1
		for j < len(s) && (s[j] == '>' || s[j] == '|') {
			j++
		}
		if j < len(s) && s[j] == '&' { // >&2
			j++
			k := j
			for k < len(s) && (s[k] >= '0' && s[k] <= '9' || s[k] == '-') {
				k++
			}
			if k > j {
				i = k - 1
				continue
			}
		}
		for j < len(s) && s[j] == ' ' {
			j++
		}
		if end := j + len("/dev/null"); strings.HasPrefix(s[j:], "/dev/null") && (end == len(s) || strings.IndexByte(" \t;&|)", s[end]) >= 0) {
			i = end - 1
			continue
		}
		return true
	}
	return false
}
