package script

import (
	"slices"
	"strings"
)

// Undefined names the functions src calls, and the constants it reads
// (names in capitals with an underscore, the modules' FR_GONE), that it
// does not declare before the use (a local, a function, a parameter or a loop variable) and that
// are not Redis's Lua (redis, cjson, string, table, math, the base
// library): a module a script uses but does not require, or requires after
// itself. Each name once, in order. It reads Lua as text, without scopes:
// a name declared anywhere before counts.
func Undefined(src string) []string {
	toks := luaTokens(src)
	declared := map[string]bool{}
	var missing []string
	for i, tok := range toks {
		prev := ""
		if i > 0 {
			prev = toks[i-1]
		}
		switch {
		case tok == "local" || tok == "for":
			for j := i + 1; j < len(toks) && isName(toks[j]); j += 2 {
				declared[toks[j]] = true
				if j+1 >= len(toks) || toks[j+1] != "," {
					break
				}
			}
		case tok == "function":
			j := i + 1
			if j < len(toks) && isName(toks[j]) && (j+1 >= len(toks) || (toks[j+1] != "." && toks[j+1] != ":")) {
				declared[toks[j]] = true
			}
			for ; j < len(toks) && toks[j] != "("; j++ {
			}
			for j++; j < len(toks) && toks[j] != ")"; j++ {
				if isName(toks[j]) {
					declared[toks[j]] = true
				}
			}
		case isName(tok) && (i+1 < len(toks) && toks[i+1] == "(" || isConstant(tok)) && prev != "." && prev != ":" && prev != "function" &&
			!luaKeywords[tok] && !luaGlobals[tok] && !declared[tok] && !slices.Contains(missing, tok):
			missing = append(missing, tok)
		}
	}
	return missing
}

// luaTokens are src's names, numbers and punctuation, comments and string
// literals left out.
func luaTokens(src string) []string {
	var toks []string
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '-' && strings.HasPrefix(src[i:], "--"):
			if n := longBracket(src[i+2:]); n > 0 {
				i += 2 + n
			} else if j := strings.IndexByte(src[i:], '\n'); j >= 0 {
				i += j
			} else {
				i = len(src)
			}
		case c == '[' && longBracket(src[i:]) > 0:
			i += longBracket(src[i:])
			toks = append(toks, `""`)
		case c == '"' || c == '\'':
			j := i + 1
			for j < len(src) && src[j] != c {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			i = j + 1
			toks = append(toks, `""`)
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9':
			j := i
			for j < len(src) && (src[j] == '_' || src[j] >= 'a' && src[j] <= 'z' || src[j] >= 'A' && src[j] <= 'Z' || src[j] >= '0' && src[j] <= '9') {
				j++
			}
			toks = append(toks, src[i:j])
			i = j
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		default:
			toks = append(toks, string(c))
			i++
		}
	}
	return toks
}

// longBracket is the length of the long bracket ([[ … ]], [==[ … ]==])
// s starts with, to its close, or 0 when s does not start with one.
func longBracket(s string) int {
	if !strings.HasPrefix(s, "[") {
		return 0
	}
	level := 1
	for level < len(s) && s[level] == '=' {
		level++
	}
	if level >= len(s) || s[level] != '[' {
		return 0
	}
	closer := "]" + strings.Repeat("=", level-1) + "]"
	if j := strings.Index(s[level+1:], closer); j >= 0 {
		return level + 1 + j + len(closer)
	}
	return len(s)
}

func isName(tok string) bool {
	c := tok[0]
	return (c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') && !luaKeywords[tok]
}

var luaKeywords = setOf("and break do else elseif end false for function if in local nil not or repeat return then true until while")

// luaGlobals are what Redis's Lua offers every script.
var luaGlobals = setOf("redis cjson cmsgpack bit struct string table math os tonumber tostring type pairs ipairs unpack select " +
	"error pcall xpcall assert next setmetatable getmetatable rawget rawset rawequal loadstring")

func setOf(words string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(words) {
		m[w] = true
	}
	return m
}

// isConstant: name is a module's constant by the modules' convention,
// capitals, digits and underscores with an underscore among them
// (FR_BLOCKED, HB_NONE): a function reading one a module declares after
// it reads a global, nil, at run time.
func isConstant(name string) bool {
	return strings.Contains(name, "_") && strings.ToUpper(name) == name && strings.ToLower(name) != name
}
