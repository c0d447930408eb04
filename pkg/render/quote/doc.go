// Package quote holds the one quoting function of each language that
// `machineadm render` writes values into: POSIX sh (Sh), PowerShell
// (PowerShell, PowerShellQuoteClass), YAML as cloud-init reads it
// (YAMLString) and systemd unit files (SystemdArg, SystemdExecPath).
// Every renderer and template quotes through these; none builds a quoted
// form of its own.
//
// A quoting function makes the interpreter read back exactly the string it
// was given, whatever that string holds — the fuzz targets of this
// package check that against the real interpreter where one runs here
// (dash, cloud-init's YAML loader, systemd-analyze). Render still refuses
// control characters in every value that reaches a script (CheckValue):
// quoting keeps them from breaking the syntax, but a line feed or NUL in a
// path has no honest use and confuses every log and tool on the way.
package quote

import (
	"fmt"
	"unicode"
	"unicode/utf8"
)

// ControlProblem says why s cannot be a path or value in a script, or ""
// when it can: it must be valid UTF-8 and hold no control character (C0,
// DEL, C1), no Unicode line or paragraph separator (U+2028, U+2029,
// which PowerShell and YAML take as line ends) and no invisible format
// character (Unicode category Cf: the byte-order mark, the bidirectional
// overrides and isolates U+202A–U+202E and U+2066–U+2069, zero-width
// characters). A format character is read back exactly when quoted, but
// it makes the script display otherwise than it runs (a right-to-left
// override reorders the rest of the line for whoever reviews the user
// data) and has no honest use in a path. The phrase names the first
// offending character by its code point and never quotes s.
func ControlProblem(s string) string {
	if !utf8.ValidString(s) {
		return "is not valid UTF-8"
	}
	for i, r := range s {
		switch {
		case unicode.IsControl(r) || r == '\u2028' || r == '\u2029':
			return fmt.Sprintf("holds the control or line-end character %U at byte %d", r, i)
		case unicode.Is(unicode.Cf, r):
			return fmt.Sprintf("holds the invisible format character %U at byte %d", r, i)
		case nonCharacter(r):
			return fmt.Sprintf("holds the Unicode noncharacter %U at byte %d", r, i)
		}
	}
	return ""
}
