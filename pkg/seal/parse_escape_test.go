package seal

import (
	"errors"
	"strings"
	"testing"
	"unicode"
)

// Control characters in a hostile envelope — a terminal escape sequence
// in an item path (a map key, printed as the field path), a field name or
// a value — come out of Parse's errors escaped, never raw.
func TestParseErrorsEscapeControlCharacters(t *testing.T) {
	env, err := Seal(testBinding, testItems, recipientOf(t, newHPKE(t, HPKESuiteP384).Recipient()))
	if err != nil {
		t.Fatal(err)
	}
	y, err := env.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	doc := string(y)
	for name, hostile := range map[string]string{
		"item path":  strings.Replace(doc, "items:\n", "items:\n  \"spec.a\\e]0;owned\\a\\x9b\": AAAA\n", 1),
		"field name": strings.Replace(doc, "algorithm:", "\"\\e[2J\": 1\nalgorithm:", 1),
		"value":      strings.Replace(doc, "algorithm: AES-256-GCM", "algorithm: \"AES\\e[31m\"", 1),
	} {
		_, err := Parse([]byte(hostile))
		if err == nil {
			t.Errorf("%s: Parse accepted the hostile document", name)
			continue
		}
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Fatalf("%s: %T %v, want a *ParseError", name, err, err)
		}
		for _, fe := range pe.Errors {
			for _, s := range []string{fe.Path, fe.Detail} {
				if i := strings.IndexFunc(s, func(r rune) bool { return r != '\n' && !unicode.IsPrint(r) }); i >= 0 {
					t.Errorf("%s: raw control character in %q", name, s)
				}
			}
		}
		if name == "item path" && !strings.Contains(err.Error(), `items[spec.a\x1b]0;owned\x07\u009b]`) {
			t.Errorf("%s: %v, want the path escaped", name, err)
		}
	}
}
