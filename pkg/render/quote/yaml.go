package quote

import (
	"regexp"
	"strings"
	"sync"

	yaml "go.yaml.in/yaml/v3"
)

// yaml11Implicit matches the plain scalars a YAML 1.1 loader resolves to
// something other than a string: PyYAML's implicit resolvers, which
// cloud-init's loader (cloudinit.safeyaml) keeps — bool (yes/no/on/off
// too), int (binary, octal, hex, sexagesimal, "_" separators), float
// (sexagesimal, .inf, .nan), null, timestamp, merge ("<<") and value
// ("=", which PyYAML's safe loader refuses outright).
var yaml11Implicit = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(?:` +
		`yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF|y|Y|n|N` +
		`|[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+` +
		`|[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)` +
		`|~|null|Null|NULL|` +
		`|[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?(?:(?:[Tt]|[ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?)?` +
		`|<<|=)$`)
})

// YAMLString is a string that marshals (go.yaml.in/yaml/v3) as a scalar
// that YAML 1.1 and 1.2 loaders both read back as the same string:
// cloud-init reads its user data with PyYAML (YAML 1.1), whose implicit
// types are wider than the YAML 1.2 core schema the encoder follows
// ("on", "0_1", "1:20", "=" ...). Such a value, and any one-line value
// with a character YAML might take as a line end or that the encoder
// could write raw, is written double-quoted with escapes; every other
// value keeps the encoder's own style (plain, quoted or a literal block).
// The cloud-config renderer writes every string through it.
type YAMLString string

// MarshalYAML implements yaml.Marshaler.
func (s YAMLString) MarshalYAML() (any, error) {
	return YAMLNode(string(s)), nil
}

// YAMLNode is the scalar node YAMLString marshals s into.
func YAMLNode(s string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
	if yamlNeedsQuotes(s) {
		n.Style = yaml.DoubleQuotedStyle
	}
	return n
}

// yamlNeedsQuotes reports whether s must be double-quoted: it would
// resolve to another type in YAML 1.1, or it holds a character other than
// a line feed that is not printable ASCII or a printable non-ASCII
// letter (controls, line and paragraph separators, NEL, a byte-order
// mark), which only the double-quoted style can escape.
func yamlNeedsQuotes(s string) bool {
	if yaml11Implicit().MatchString(s) || strings.TrimSpace(s) != s && !strings.Contains(s, "\n") {
		return true
	}
	return strings.ContainsFunc(s, func(r rune) bool {
		return r != '\n' && (r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == 0x2028 || r == 0x2029 || r == 0xfeff || r >= 0xfffe && r <= 0xffff)
	})
}
