package quote

import "strings"

// Sh quotes s as one POSIX sh word in single quotes, each "'" written as
// '\” (close the quote, an escaped apostrophe, reopen). Inside single
// quotes every other byte stands for itself (POSIX.1-2017, Shell Command
// Language 2.2.2), so sh reads back s for every s that holds no NUL (sh
// words cannot hold one; render refuses control characters before, see
// ControlProblem). The empty string becomes ”.
func Sh(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
