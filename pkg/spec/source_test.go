package spec

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/machineadm/machineadm/internal/testfifo"
	"github.com/machineadm/machineadm/internal/testspec"
)

// TestReadSourceBounded: /dev/zero, a FIFO without a writer and an endless
// standard input are refused as invalid input, quickly and without
// reading more than the limit.
func TestReadSourceBounded(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "spec.fifo")
	testfifo.Make(t, fifo)
	big := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(big, make([]byte, MaxSpecSize+1), 0o600); err != nil {
		t.Fatal(err)
	}
	zero, err := os.Open("/dev/zero")
	if err != nil {
		t.Fatal(err)
	}
	defer zero.Close()
	for _, c := range []struct {
		path  string
		stdin *os.File
		want  string
	}{
		{"/dev/zero", nil, "character device"},
		{fifo, nil, "FIFO"},
		{t.TempDir(), nil, "directory"},
		{big, nil, "more than the 4194304 allowed"},
		{"-", zero, "more than the 4194304 bytes allowed"},
	} {
		_, err := ReadSource(c.path, c.stdin)
		if !IsInvalidSpec(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ReadSource(%s): %v, want an invalid spec saying %q", c.path, err, c.want)
		}
	}
	p := filepath.Join(t.TempDir(), "ok.yaml")
	if err := os.WriteFile(p, []byte(testspec.MinimalWorker), 0o600); err != nil {
		t.Fatal(err)
	}
	if data, err := ReadSource(p, nil); err != nil || string(data) != testspec.MinimalWorker {
		t.Fatalf("ReadSource of a regular file: %v", err)
	}
	if data, err := ReadSource("-", bytes.NewReader([]byte("x"))); err != nil || string(data) != "x" {
		t.Fatalf("ReadSource of stdin: %q, %v", data, err)
	}
}

// TestHugeValueNotEchoed: a multi-megabyte value (a label, a sysctl key, a
// type error) is quoted in at most MaxQuotedValue bytes, with its length.
func TestHugeValueNotEchoed(t *testing.T) {
	huge := strings.Repeat("v", 3<<20)
	for name, doc := range map[string]string{
		"label value": strings.Replace(testspec.MinimalWorker, "spec:\n", "spec:\n  node: {labels: {a: "+huge+"}}\n", 1),
		"sysctl key":  strings.Replace(testspec.MinimalWorker, "spec:\n", "spec:\n  host: {sysctl: {"+huge+": 1}}\n", 1),
		"type error":  strings.Replace(testspec.MinimalWorker, "spec:\n", "spec:\n  node: {labels: ["+huge+"]}\n", 1),
		"yaml syntax": "a: [" + huge,
	} {
		_, err := Load([]byte(doc), "huge.yaml")
		if err == nil {
			t.Fatalf("%s: accepted", name)
		}
		if n := len(err.Error()); n > 4*maxErrorLine {
			t.Errorf("%s: error of %d bytes", name, n)
		}
	}
	if _, err := Load(make([]byte, MaxSpecSize+1), "big.yaml"); !IsInvalidSpec(err) || !strings.Contains(err.Error(), "more than the 4194304 allowed") {
		t.Errorf("Load of a document over MaxSpecSize: %v", err)
	}
	_, err := Load([]byte(strings.Replace(testspec.MinimalWorker, "spec:\n", "spec:\n  node: {labels: {a: "+huge+"}}\n", 1)), "huge.yaml")
	if !strings.Contains(err.Error(), "(3145728 bytes)") {
		t.Errorf("the cut value does not give its length: %.300s", err)
	}
}

// TestInvalidSpecErrorBoundedWhoeverBuiltIt: an *InvalidSpecError made
// elsewhere (the kubeadm check quotes kubeadm's message) prints bounded
// lines too.
func TestInvalidSpecErrorBoundedWhoeverBuiltIt(t *testing.T) {
	e := &InvalidSpecError{Source: "x.yaml", Errors: field.ErrorList{
		field.Invalid(field.NewPath("spec", "controlPlane", "apiServer", "certSANs").Index(0), strings.Repeat("s", 1<<20), strings.Repeat("d", 1<<20)),
	}}
	if n := len(e.Error()); n > maxErrorLine+100 {
		t.Errorf("error of %d bytes", n)
	}
	if len(e.Errors[0].BadValue.(string)) != 1<<20 {
		t.Error("Error() changed the error list")
	}
	// Its source (a path from the command line) is escaped as well: no
	// control character, and no line feed that would start a line.
	e = &InvalidSpecError{Source: "t\x1b[1m\nkind: Evil.yaml", Errors: field.ErrorList{field.Invalid(field.NewPath("spec"), field.OmitValueType{}, "bad")}}
	if msg := e.Error(); strings.ContainsAny(msg, "\x1b") || strings.Contains(msg, "\nkind: Evil") || !strings.Contains(msg, `t\x1b[1m\x0akind: Evil.yaml`) {
		t.Errorf("source not escaped: %q", msg)
	}
}

// TestControlCharactersInFieldPathsEscaped: a map key is part of a field
// path (spec.node.labels[KEY]); one holding a terminal escape sequence
// comes out of InvalidSpecError escaped, as values are, never raw.
func TestControlCharactersInFieldPathsEscaped(t *testing.T) {
	doc := testspec.MinimalWorker + "  node:\n    labels:\n      \"ex\\e]0;owned\\a/pool\": a\n      \"kubernetes.io/\\e[2J\\u009b\": b\n  host:\n    sysctl: {\"net.\\e[31m\": \"1\"}\n"
	_, err := Load([]byte(doc), "t\x1b[1m.yaml")
	if err == nil {
		t.Fatal("Load accepted label keys with control characters")
	}
	msg := err.Error()
	if i := strings.IndexFunc(msg, func(r rune) bool { return r != '\n' && (r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0) }); i >= 0 {
		t.Errorf("raw control character at %d:\n%q", i, msg)
	}
	if !strings.Contains(msg, `spec.node.labels[ex\x1b]0;owned\x07/pool]`) {
		t.Errorf("the label's path is not named, escaped:\n%s", msg)
	}
	// Escaping twice (the error printed again) changes nothing.
	if again := newInvalid("x", err.(*InvalidSpecError).Errors).Error(); strings.Count(again, `\\x1b`) > 0 {
		t.Errorf("escaped twice:\n%s", again)
	}
}

// TestConfusablesEscapedLikeInvisibles: a node name with a Cyrillic "о"
// (a homoglyph) or a zero-width space, and a label key with one, are
// shown alike: every non-ASCII rune escaped, in the quoted value and in
// the field path, so the error says what is wrong with a name that looks
// right. Printing the error again changes nothing.
func TestConfusablesEscapedLikeInvisibles(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"w\u043erker-1", `"w\u043erker-1"`},
		{"worker\u200b-1", `"worker\u200b-1"`},
	} {
		doc := testspec.MinimalWorker + "  node:\n    name: \"" + tc.name + "\"\n    labels: {\"p\u043eol\": a}\n"
		_, err := Load([]byte(doc), "t.yaml")
		if err == nil {
			t.Fatalf("Load accepted node name %q", tc.name)
		}
		msg := err.Error()
		if !strings.Contains(msg, "spec.node.name: Invalid value: "+tc.want) || !strings.Contains(msg, `spec.node.labels[p\u043eol]`) {
			t.Errorf("%q: not shown escaped:\n%s", tc.name, msg)
		}
		if strings.ContainsAny(msg, "\u043e\u200b") {
			t.Errorf("%q: shown raw:\n%s", tc.name, msg)
		}
		if again := newInvalid("t.yaml", err.(*InvalidSpecError).Errors).Error(); again != msg {
			t.Errorf("printed again:\n%s\nfirst:\n%s", again, msg)
		}
	}
}
