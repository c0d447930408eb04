package day2

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRESTConfigErrorQuotesNoContent: a file that does not load as a
// kubeconfig is refused with an error that quotes none of its content
// (upgrade --kubeconfig may name any file root can read): the YAML layer
// quotes a map key or tagged scalar it cannot take, which may be a
// credential. What quotes nothing (a base64 field that does not decode, a
// kind that is not Config) keeps the loader's words.
func TestRESTConfigErrorQuotesNoContent(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ name, content, want string }{
		{"null key", "users:\n- name: u\n  user:\n    ~: SECRET-null-key\n", "a map key or a tagged value"},
		{"null key, number", "users:\n- name: u\n  user:\n    ~: 73197311\n", "a map key or a tagged value"},
		{"sequence key", "users:\n- name: u\n  user:\n    ? [SECRET-seq-key]\n    : x\n", "a map key or a tagged value"},
		{"tagged scalar", "users:\n- name: u\n  user:\n    token: !!int SECRET-tag\n", "a map key or a tagged value"},
		{"base64", "users:\n- name: u\n  user:\n    client-key-data: not-base64-SECRET\n", "illegal base64 data"},
		{"kind", "apiVersion: v1\nkind: Secret\ndata: {a: SECRET-data}\n", `no kind "Secret" is registered for version "v1"`},
	} {
		p := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-"))
		if err := os.WriteFile(p, []byte(c.content), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := RESTConfig(p)
		if err == nil {
			t.Errorf("%s: loaded", c.name)
			continue
		}
		if msg := err.Error(); strings.Contains(msg, "SECRET") || strings.Contains(msg, "73197311") || !strings.Contains(msg, c.want) {
			t.Errorf("%s: error %q, want %q and none of the file's content", c.name, msg, c.want)
		}
	}
}

// TestLoadErrorKeepsShortQuotes: a quoted segment of fewer than 4 bytes
// (a JSON syntax error's character) is no credential; the loader's own
// words stay.
func TestLoadErrorKeepsShortQuotes(t *testing.T) {
	err := errors.New("invalid character 'x' looking for beginning of value")
	if got := loadError(err, []byte(`{"a": x}`)); got != err {
		t.Errorf("loadError = %v, want the loader's error", got)
	}
	long := errors.New(`invalid map key: "abcdef"`)
	if got := loadError(long, []byte("abcdef")); got == long {
		t.Errorf("loadError kept %v", got)
	}
}
