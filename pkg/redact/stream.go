package redact

import (
	"strings"
	"unicode"
)

// Stream redacts consecutive lines of one text (a log, a command's output)
// and remembers what a line says about the next one:
//   - inside a PEM private key block ("-----BEGIN ... PRIVATE KEY-----" up to
//     "-----END ... PRIVATE KEY-----") every line is replaced, the
//     delimiters included;
//   - a line that ends with a certificate key label ("Using certificate
//     key:") makes a following line that is only 64 hex digits secret.
//
// A Stream is not safe for concurrent use; use one per text.
type Stream struct {
	r          *Redactor
	inPEM      bool
	afterLabel bool
}

// NewStream returns a Stream that redacts with r's secrets and patterns.
func (r *Redactor) NewStream() *Stream { return &Stream{r: r} }

// Line returns one line (without its line break) redacted.
func (s *Stream) Line(line string) string {
	if s.r == nil {
		return line
	}
	afterLabel := s.afterLabel
	s.afterLabel = false
	switch {
	case s.inPEM:
		if pemEnd().MatchString(line) {
			s.inPEM = false
		}
		return Placeholder
	case strings.Contains(line, "PRIVATE KEY-----") && pemBegin().MatchString(line):
		loc := pemBegin().FindStringIndex(line)
		// Keep what precedes the block (a log prefix, a YAML key).
		prefix := s.r.replaceKnown(line[:loc[0]]) + Placeholder
		rest := line[loc[1]:]
		end := pemEnd().FindStringIndex(rest)
		if end == nil {
			s.inPEM = true
			return prefix
		}
		// A whole block on one line, as in JSON with escaped line breaks.
		return prefix + s.Line(rest[end[1]:])
	case afterLabel && hex64Line().MatchString(line):
		return Placeholder
	}
	out := s.r.replaceKnown(line)
	s.afterLabel = endsWithKey(line) && certKeyLabel().MatchString(line)
	return out
}

// endsWithKey reports whether line ends with "key" (any letter case)
// followed by nothing but punctuation and blanks: a cheap test before
// certKeyLabel.
func endsWithKey(line string) bool {
	t := strings.TrimRightFunc(line, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' })
	return len(t) >= 3 && strings.EqualFold(t[len(t)-3:], "key")
}
