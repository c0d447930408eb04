package quote

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"
)

// systemdPlain is a word systemd reads as itself without quotes: no
// white space, quote, backslash, specifier (%), variable ($) or ";".
var systemdPlain = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9/._+,:@=-]+$`) })

// systemdExecPlain is an executable path render writes into a unit.
var systemdExecPlain = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^/[A-Za-z0-9/._+-]+$`) })

// SystemdArg quotes s as one argument word of an Exec*= command line
// (systemd.service(5), "Command lines"; systemd.unit(5), "Specifiers"):
//
//   - s itself when it is made only of letters, digits and / . _ + , : @ = -;
//   - else in single quotes when it holds no ' " \ % $ or control
//     character;
//   - else in double quotes, with \\, \", \' and C escapes (\n, \t,
//     \xNN) for control characters, "%" written "%%" (a specifier
//     otherwise) and "$" written "$$" (systemd expands $NAME and ${NAME}
//     in arguments when the command runs).
//
// systemd reads back s for every s that is valid UTF-8 without NUL (a
// word cannot hold NUL); an error says which of the two s breaks.
func SystemdArg(s string) (string, error) {
	if err := systemdValid(s); err != nil {
		return "", err
	}
	switch {
	case s == ";":
		// A lone ";" separates commands, quoted or not; "\;" is the
		// literal (systemd.service(5)).
		return `\;`, nil
	case systemdPlain().MatchString(s):
		return s, nil
	case !strings.ContainsAny(s, `'"\%$`) && ControlProblem(s) == "":
		return "'" + s + "'", nil
	}
	return systemdDoubleQuoted(s, true), nil
}

// SystemdExecPath checks p, the executable of an Exec*= line, and writes
// it as the line's first word. systemd takes the executable literally ($
// is not expanded there) and refuses one that is not absolute, not
// normalized or holds "special characters"; the executables render
// writes are plain absolute paths (letters, digits and / . _ + -), so
// anything else is an error rather than a quoted form.
func SystemdExecPath(p string) (string, error) {
	switch {
	case !strings.HasPrefix(p, "/"):
		return "", fmt.Errorf("not an absolute path")
	case !systemdExecPlain().MatchString(p):
		return "", fmt.Errorf("use only letters, digits and / . _ + - in a path a systemd unit runs")
	case strings.Contains(p, "//") || strings.Contains(p+"/", "/./") || strings.Contains(p+"/", "/../") || strings.HasSuffix(p, "/"):
		return "", fmt.Errorf("not a normalized path")
	}
	return p, nil
}

func systemdValid(s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("not valid UTF-8, which a unit file cannot hold")
	}
	if strings.IndexByte(s, 0) >= 0 {
		return fmt.Errorf("holds NUL, which a systemd command-line word cannot hold")
	}
	if i := strings.IndexFunc(s, nonCharacter); i >= 0 {
		r, _ := utf8.DecodeRuneInString(s[i:])
		return fmt.Errorf("holds the Unicode noncharacter %U, which systemd refuses as invalid UTF-8 (it ignores the whole line)", r)
	}
	return nil
}

// nonCharacter reports a Unicode noncharacter: U+FDD0–U+FDEF and the last
// two code points of every plane (U+FFFE, U+FFFF, U+1FFFE, ...). systemd's
// UTF-8 check refuses them, so a unit line holding one is dropped.
func nonCharacter(r rune) bool {
	return r >= 0xFDD0 && r <= 0xFDEF || r&0xFFFE == 0xFFFE
}

// systemdDoubleQuoted writes s in double quotes with C escapes; dollar
// doubles "$" (arguments only).
func systemdDoubleQuoted(s string, dollar bool) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '\\' || r == '"' || r == '\'':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '%':
			b.WriteString("%%")
		case r == '$' && dollar:
			b.WriteString("$$")
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r >= 0x80 && r < 0xa0:
			// C1 controls: systemd's \u escape, never raw bytes
			// that a log or terminal would act on.
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
