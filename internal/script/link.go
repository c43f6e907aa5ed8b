package script

import "strings"

// link joins a script's files, modules first and the script last, as a
// linker does: of each module it keeps only the top-level definitions the
// script reaches (calls or reads, directly or through what it reaches),
// so that Redis receives the Lua a script runs, not every function of
// every module it requires. A module of which nothing is reached is left
// out whole, its opening comment with it. Of a module's definitions Redis
// receives the code (code): their comments are for the module's readers,
// in its file, and a module's opening comment goes as its first line, to
// say where its code begins; the script's own file goes whole, its header
// being the script's contract.
//
// It reads the modules' layout, which every module keeps: a top-level
// statement starts at column 0 (a "local function", a "local" constant,
// anything else), its body is indented, and it ends at the next line at
// column 0 that does not go on with it ("end", "else", "}" …). The comment lines right above a
// definition go with it. A top-level statement that defines nothing is
// kept, and what it names is reached.
func link(files []string) string {
	var units []*unit
	for i, src := range files {
		units = append(units, split(src, i == len(files)-1)...)
	}
	defs := map[string]*unit{}
	for _, u := range units {
		for _, name := range u.defines {
			defs[name] = u
		}
	}
	var reach func(u *unit)
	reach = func(u *unit) {
		if u.kept {
			return
		}
		u.kept = true
		for _, tok := range luaTokens(u.text) {
			if d := defs[tok]; d != nil {
				reach(d)
			}
		}
	}
	for _, u := range units {
		if u.root {
			reach(u)
		}
	}
	var b strings.Builder
	for i, u := range units {
		if u.header && !headerKept(units[i+1:]) {
			continue
		}
		switch {
		case u.script:
			b.WriteString(u.text) // the script's own file, its header the contract
		case u.header:
			b.WriteString(firstComment(u.text))
		case u.kept:
			b.WriteString(code(u.text))
		}
	}
	return b.String()
}

// code is a module's definition as Redis receives it: its lines of code,
// without the comment lines and blank lines between them, which stay in
// the module's file for its readers (Redis runs none of them). A
// definition that holds a long bracket ("[[", a long comment or string,
// whose lines a comment line may not end) goes whole.
func code(text string) string {
	if strings.Contains(text, "[[") || strings.Contains(text, "[=") {
		return text
	}
	var b strings.Builder
	for _, line := range strings.SplitAfter(text, "\n") {
		if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "--") {
			b.WriteString(line)
		}
	}
	return b.String()
}

// firstComment is the line of a module's opening comment that names it
// ("-- push.lua: …"), past its requires lines: where the module's code
// begins in what Redis receives.
func firstComment(header string) string {
	for _, line := range strings.SplitAfter(header, "\n") {
		if t := strings.TrimSpace(line); strings.HasPrefix(t, "--") && !strings.HasPrefix(t, "-- requires:") && t != "--" {
			return line
		}
	}
	return ""
}

// A unit is a piece of one file: its opening comment (header), or one
// top-level statement with the comment above it.
type unit struct {
	text    string
	defines []string // the names a definition declares
	root    bool     // kept whatever reaches it: the script's own text, or a statement that defines nothing
	script  bool     // the script's own file, sent whole
	header  bool     // a module's opening comment: kept when any of its module is
	kept    bool
}

// headerKept reports whether the module whose units follow a header up
// to the next header keeps any.
func headerKept(rest []*unit) bool {
	for _, u := range rest {
		if u.header {
			return false
		}
		if u.kept {
			return true
		}
	}
	return false
}

// split cuts one file into its units; the script's own file (script) is
// one unit, kept whole.
func split(src string, script bool) []*unit {
	if !strings.HasSuffix(src, "\n") {
		src += "\n"
	}
	if script {
		return []*unit{{text: src, root: true, script: true}}
	}
	lines := strings.SplitAfter(src, "\n")
	lines = lines[:len(lines)-1] // SplitAfter's empty last
	out := []*unit{{header: true}}
	cur, pending := out[0], ""
	for _, line := range lines {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "--") {
			pending += line
			continue
		}
		if startsStatement(line) {
			if cur.header {
				// The header ends at the first blank line of the comment
				// before the first statement; the rest goes with it.
				head, rest := cutHeader(pending)
				cur.text += head
				pending = rest
			}
			cur = &unit{text: pending}
			cur.defines, cur.root = defines(line)
			out = append(out, cur)
		} else {
			cur.text += pending
		}
		cur.text += line
		pending = ""
	}
	cur.text += pending
	return out
}

// startsStatement: line begins a top-level statement (column 0, and not
// the rest of one begun above: its end, else, until or closing bracket).
func startsStatement(line string) bool {
	c := line[0]
	if c == ' ' || c == '\t' {
		return false
	}
	toks := luaTokens(line)
	if len(toks) == 0 {
		return false
	}
	switch toks[0] {
	case "end", "else", "elseif", "until", "}", ")", "]":
		return false // the rest of a statement begun above
	}
	return true
}

// defines is what a top-level statement declares ("local function f",
// "local A, B = …", "function g"), or root when it declares nothing and
// runs (a module's statement is then kept).
func defines(line string) (names []string, root bool) {
	toks := luaTokens(line)
	switch {
	case len(toks) >= 3 && toks[0] == "local" && toks[1] == "function":
		return []string{toks[2]}, false
	case len(toks) >= 2 && toks[0] == "function" && isName(toks[1]) && (len(toks) < 3 || toks[2] == "("):
		return []string{toks[1]}, false
	case len(toks) >= 2 && toks[0] == "local":
		for i := 1; i < len(toks) && isName(toks[i]); i += 2 {
			names = append(names, toks[i])
			if i+1 >= len(toks) || toks[i+1] != "," {
				break
			}
		}
		return names, len(names) == 0
	}
	return nil, true
}

// cutHeader splits the comment lines before a module's first statement
// into its opening comment (up to the last blank line) and the comment of
// that statement.
func cutHeader(pending string) (head, rest string) {
	lines := strings.SplitAfter(pending, "\n")
	last := -1
	for i, l := range lines {
		if strings.TrimSpace(l) == "" && l != "" {
			last = i
		}
	}
	return strings.Join(lines[:last+1], ""), strings.Join(lines[last+1:], "")
}
