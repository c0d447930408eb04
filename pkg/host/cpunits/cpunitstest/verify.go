// Package cpunitstest holds test helpers for the control-plane units,
// shared by the tests of pkg/host/cpunits and pkg/kubeadm.
package cpunitstest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/machineadm/machineadm/pkg/host/cpunits"
)

// VerifyForTest renders c into a temporary directory with a stand-in
// binary and accounts that exist on any Linux system ("daemon"; the
// environment file and supplementary groups left out), fails t when
// `systemd-analyze verify` complains, and returns the unit's exposure
// level, logged for the documentation. Callers skip when systemd-analyze
// is missing.
func VerifyForTest(t testing.TB, c cpunits.Component) float64 {
	t.Helper()
	dir := t.TempDir()
	c.Command = append([]string{filepath.Join(dir, filepath.Base(c.Command[0]))}, c.Command[1:]...)
	if err := os.WriteFile(c.Command[0], []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	fs, err := cpunits.Render(c)
	if err != nil {
		t.Fatal(err)
	}
	content := strings.NewReplacer("User="+c.User+"\n", "User=daemon\n", "Group="+c.Group+"\n", "Group=daemon\n").Replace(string(fs[0].Content))
	content = regexp.MustCompile(`(?m)^(SupplementaryGroups|EnvironmentFile)=.*\n`).ReplaceAllString(content, "")
	unit := filepath.Join(dir, c.Unit())
	if err := os.WriteFile(unit, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := cpunits.Verify(ctx, unit, cpunits.ExecIn(dir)); err != nil {
		t.Errorf("%v\n%s", err, content)
	}
	score, table, err := cpunits.Exposure(ctx, unit, cpunits.ExecIn(dir))
	if err != nil {
		t.Fatalf("%v\n%s", err, table)
	}
	t.Logf("%s: systemd-analyze security exposure %.1f", c.Unit(), score)
	return score
}

// ParseExecStart returns the argv of the ExecStart= line of a unit file
// by systemd's rules for what cpunits.Render writes (systemd.service(5),
// "Command lines"): continuation lines joined, words separated by white
// space, double quotes with "\\" and "\"" escapes, "\;" for a lone ";",
// "%%" for "%" and "$$" for "$".
func ParseExecStart(unit string) ([]string, error) {
	var line string
	n := 0
	for _, l := range strings.Split(strings.ReplaceAll(unit, "\\\n\t", " "), "\n") {
		if v, ok := strings.CutPrefix(l, "ExecStart="); ok {
			line, n = v, n+1
		}
	}
	if n != 1 {
		return nil, fmt.Errorf("%d ExecStart= lines, want 1", n)
	}
	var out []string
	var cur strings.Builder
	inWord, quoted := false, false
	for i := 0; i < len(line); i++ {
		ch := line[i]
		switch {
		case ch == '\\' && i+1 < len(line):
			i++
			cur.WriteByte(line[i])
			inWord = true
		case quoted && ch == '"':
			quoted = false
		case quoted:
			cur.WriteByte(ch)
		case ch == '"':
			quoted, inWord = true, true
		case ch == ' ' || ch == '\t':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(ch)
			inWord = true
		}
	}
	if quoted {
		return nil, fmt.Errorf("unterminated quote in %q", line)
	}
	if inWord {
		out = append(out, cur.String())
	}
	for i := range out {
		out[i] = unescape(out[i])
	}
	return out, nil
}

// CredentialsDir is what ParseExecStart gives for the specifier %d, the
// unit's credentials directory.
const CredentialsDir = "${CREDENTIALS_DIRECTORY}"

// unescape undoes "%%", "$$" and expands "%d" to CredentialsDir, left to
// right as systemd reads them.
func unescape(w string) string {
	var b strings.Builder
	for i := 0; i < len(w); i++ {
		switch {
		case w[i] == '%' && i+1 < len(w) && w[i+1] == '%', w[i] == '$' && i+1 < len(w) && w[i+1] == '$':
			b.WriteByte(w[i])
			i++
		case w[i] == '%' && i+1 < len(w) && w[i+1] == 'd':
			b.WriteString(CredentialsDir)
			i++
		default:
			b.WriteByte(w[i])
		}
	}
	return b.String()
}

// ResolveCredentials returns argv (ParseExecStart's) with every
// CredentialsDir+"/ID" replaced by the source path the unit's
// LoadCredential=ID:PATH line gives, that is, the file the process reads;
// an ID without a LoadCredential= line is an error.
func ResolveCredentials(unit string, argv []string) ([]string, error) {
	creds := map[string]string{}
	for _, l := range strings.Split(unit, "\n") {
		if v, ok := strings.CutPrefix(l, "LoadCredential="); ok {
			id, p, _ := strings.Cut(v, ":")
			creds[id] = strings.ReplaceAll(p, "%%", "%")
		}
	}
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = a
		j := strings.Index(a, CredentialsDir+"/")
		if j < 0 {
			continue
		}
		id := a[j+len(CredentialsDir)+1:]
		p, ok := creds[id]
		if !ok {
			return nil, fmt.Errorf("argument %q names credential %q, which no LoadCredential= line loads", a, id)
		}
		out[i] = a[:j] + p
	}
	return out, nil
}

// ParseEnvFile returns the variables of an environment file as
// cpunits.Render writes it (NAME="value" with "\\", "\"", "\$" and "\`"
// escapes), in order.
func ParseEnvFile(content string) ([]cpunits.EnvVar, error) {
	var out []cpunits.EnvVar
	for _, l := range strings.Split(strings.TrimSuffix(content, "\n"), "\n") {
		if l == "" {
			continue
		}
		name, v, ok := strings.Cut(l, "=")
		if !ok || len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
			return nil, fmt.Errorf("bad environment line %q", l)
		}
		var b strings.Builder
		v = v[1 : len(v)-1]
		for i := 0; i < len(v); i++ {
			if v[i] == '\\' && i+1 < len(v) {
				i++
			}
			b.WriteByte(v[i])
		}
		out = append(out, cpunits.EnvVar{Name: name, Value: b.String()})
	}
	return out, nil
}
