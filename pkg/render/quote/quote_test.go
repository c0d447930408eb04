package quote

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v3"
)

// hostile are seeds every fuzz target starts from: quotes of every
// language, typographic quotes, line ends, command separators, variable
// and specifier syntax, escapes, YAML 1.1 implicit types.
var hostile = []string{
	"", "plain", "a b", "'", `'\''`, `"`, `\`, `\\`, "$HOME", "${HOME}", "$$", "$(id)", "`id`", "%n", "%%", "%",
	";", "&&", "|", "a;b", "\n", "\r\n", "a\nb", "\t", "\x01", "\x7f", "\u0085", "\u2028", "\u2029", "\ufeff",
	"\u2018", "\u2019", "\u201a", "\u201b", "x\u2019; Start-Process calc; \u2018", "'@\n", "@'\n",
	"yes", "on", "off", "no", "y", "~", "null", "=", "<<", "0600", "0_1", "1:20", "1:20.5", ".5", "0x1f", "0b11",
	"2001-12-14 21:59:43.10 -5", "2001-12-14", "- a", "? a", ": a", "a: b", "#c", "a #c", "!tag", "&a", "*a", "{a}", "[a]",
	" lead", "trail ", "é", "日本", "\U0001F600", "/opt/bin/machine adm", "C:\\Program Files\\m.exe",
}

// missing skips a test whose interpreter is not installed on a developer
// machine, and fails it in CI (CI=true), which installs every one.
func missing(tb testing.TB, why string) {
	tb.Helper()
	if os.Getenv("CI") == "true" {
		tb.Fatal(why)
	}
	tb.Skip(why)
}

func addSeeds(f *testing.F) {
	for _, s := range hostile {
		f.Add(s)
	}
}

// FuzzSh round-trips s through dash: `printf %s WORD` must print s.
func FuzzSh(f *testing.F) {
	dash, err := exec.LookPath("dash")
	if err != nil {
		missing(f, "dash is not installed (hack/install-deps.sh)")
	}
	addSeeds(f)
	f.Fuzz(func(t *testing.T, s string) {
		if strings.IndexByte(s, 0) >= 0 {
			return // no sh word holds NUL; render refuses control characters
		}
		out, err := exec.Command(dash, "-c", "printf %s "+Sh(s)).Output()
		if err != nil {
			t.Fatalf("dash -c printf %%s %s: %v", Sh(s), err)
		}
		if string(out) != s {
			t.Fatalf("dash read %q back as %q", s, out)
		}
	})
}

// psLexVerbatimFake is a fake of PowerShell's tokenizer for one verbatim
// string, written from its documented rules because no PowerShell runs
// here (about_Quoting_Rules; the tokenizer's IsSingleQuote takes
// U+0027 and U+2018..U+201B): src must start with a quote character;
// inside, a quote character followed by another stands for the second,
// a lone one ends the string. It returns the string's value and the rest
// of src after the closing quote.
func psLexVerbatimFake(t *testing.T, src string) (value, rest string) {
	t.Helper()
	isQuote := func(r rune) bool { return r == '\'' || (r >= '\u2018' && r <= '\u201b') }
	r, n := utf8.DecodeRuneInString(src)
	if !isQuote(r) {
		t.Fatalf("%q does not start with a quote", src)
	}
	var b strings.Builder
	for i := n; i < len(src); {
		r, n := utf8.DecodeRuneInString(src[i:])
		i += n
		if isQuote(r) {
			r2, n2 := utf8.DecodeRuneInString(src[i:])
			if i < len(src) && isQuote(r2) {
				b.WriteRune(r2)
				i += n2
				continue
			}
			return b.String(), src[i:]
		}
		b.WriteRune(r)
	}
	t.Fatalf("unterminated verbatim string %q", src)
	return "", ""
}

// FuzzPowerShell checks PowerShell(s) with the tokenizer fake: one
// verbatim string whose value is s, nothing after it.
func FuzzPowerShell(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return // PowerShell scripts are UTF-8 text; render refuses invalid UTF-8
		}
		q := PowerShell(s)
		v, rest := psLexVerbatimFake(t, q+"; Write-Output injected")
		if v != s || rest != "; Write-Output injected" {
			t.Fatalf("PowerShell(%q) = %s reads back as %q, then %q", s, q, v, rest)
		}
	})
}

// TestPowerShellEveryQuoteAndLineEnd goes over every character
// PowerShell takes as a single quote, and every line or statement end,
// alone, doubled and inside an injection attempt: the quoted form must
// be one verbatim string with the value given (a line end inside a
// verbatim string is part of it, not the end of a statement).
func TestPowerShellEveryQuoteAndLineEnd(t *testing.T) {
	special := append([]rune{}, PowerShellQuotes...)
	special = append(special, '\n', '\r', '\u0085', '\u2028', '\u2029', ';', '&', '|', '`', '$', '"', '#', '@', '(', ')', '{', '}')
	for _, c := range special {
		for _, s := range []string{string(c), string(c) + string(c), "C:\\a" + string(c) + "; Start-Process calc; " + string(c) + "b.exe", string(c) + "@\n'@"} {
			q := PowerShell(s)
			v, rest := psLexVerbatimFake(t, q+"\n")
			if v != s || rest != "\n" {
				t.Errorf("%U: PowerShell(%q) = %s reads back as %q, then %q", c, s, q, v, rest)
			}
		}
	}
	if got := len(PowerShellQuotes); got != 5 {
		t.Fatalf("PowerShellQuotes has %d characters, PowerShell has 5 single quotes", got)
	}
}

// TestPowerShellQuoteClass checks that the .NET class the stub uses at
// run time names exactly PowerShellQuotes (\uXXXX is .NET's escape).
func TestPowerShellQuoteClass(t *testing.T) {
	c := PowerShellQuoteClass()
	if c != `['\u2018\u2019\u201a\u201b]` {
		t.Fatalf("PowerShellQuoteClass() = %s", c)
	}
	for _, b := range []byte(c) {
		if b >= 0x80 {
			t.Fatalf("class %q is not ASCII", c)
		}
	}
}

// cloudInitYAML is a python3 process that loads YAML documents with
// cloud-init's own loader (cloudinit.safeyaml.load, what cloud-init
// reads user data with) and answers each with JSON.
type cloudInitYAML struct {
	mu  sync.Mutex
	in  *json.Encoder
	out *bufio.Scanner
}

var (
	ciOnce sync.Once
	ci     *cloudInitYAML
	ciErr  string
)

const ciLoader = `
import json, sys
from cloudinit import safeyaml
for line in sys.stdin:
    doc = json.loads(line)
    try:
        print(json.dumps({"value": safeyaml.load(doc)}), flush=True)
    except Exception as e:
        print(json.dumps({"error": type(e).__name__ + ": " + str(e)}), flush=True)
`

func loadCloudInit(t *testing.T) *cloudInitYAML {
	ciOnce.Do(func() {
		py := "/usr/bin/python3" // cloud-init's own interpreter, not a virtualenv's
		if err := exec.Command(py, "-c", "import cloudinit.safeyaml").Run(); err != nil {
			ciErr = "cloud-init's python module is not installed (hack/install-deps.sh): " + err.Error()
			return
		}
		cmd := exec.Command(py, "-c", ciLoader)
		stdin, _ := cmd.StdinPipe()
		stdout, _ := cmd.StdoutPipe()
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			ciErr = err.Error()
			return
		}
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		ci = &cloudInitYAML{in: json.NewEncoder(stdin), out: sc}
	})
	if ci == nil {
		missing(t, ciErr)
	}
	return ci
}

// load parses doc with cloud-init's loader into a JSON value.
func (c *cloudInitYAML) load(t *testing.T, doc []byte) (any, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.in.Encode(string(doc)); err != nil {
		t.Fatal(err)
	}
	if !c.out.Scan() {
		t.Fatalf("cloud-init loader exited: %v", c.out.Err())
	}
	var r struct {
		Value any    `json:"value"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal(c.out.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	return r.Value, r.Error
}

// FuzzYAMLString encodes s as a mapping value and a flow-list item the
// way the cloud-config renderer does, and loads the document with
// cloud-init's own YAML loader: both must read back as the string s.
func FuzzYAMLString(f *testing.F) {
	addSeeds(f)
	f.Add("line one\nline two\n")
	f.Add("tab\tand trailing\n  ")
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return // YAML text is Unicode; the renderer encodes bytes in base64
		}
		c := loadCloudInit(t)
		doc := struct {
			V YAMLString     `yaml:"v"`
			L [][]YAMLString `yaml:"l,flow"`
		}{YAMLString(s), [][]YAMLString{{"/bin/sh", YAMLString(s)}}}
		var b bytes.Buffer
		enc := yaml.NewEncoder(&b)
		enc.SetIndent(2)
		enc.CompactSeqIndent()
		if err := enc.Encode(&doc); err != nil {
			t.Fatalf("encoding %q: %v", s, err)
		}
		got, errText := c.load(t, b.Bytes())
		if errText != "" {
			t.Fatalf("cloud-init cannot load the YAML for %q: %s\n%s", s, errText, b.Bytes())
		}
		m, _ := got.(map[string]any)
		l, _ := m["l"].([]any)
		var item any
		if len(l) == 1 {
			if inner, _ := l[0].([]any); len(inner) == 2 {
				item = inner[1]
			}
		}
		if m["v"] != s || item != s {
			t.Fatalf("cloud-init reads %q back as %#v and %#v from\n%s", s, m["v"], item, b.Bytes())
		}
	})
}

// FuzzSystemdArg has systemd itself parse SystemdArg(s): systemd-analyze
// verify loads a unit whose ExecStart= executable is the quoted word
// (with s's "/" made "_" so that it stays one absolute, normalized path,
// between a prefix and a suffix)
// and names the path it parsed when the file does not exist. Arguments
// differ from the executable in one way only, which the comparison
// allows for: "$" is expanded in arguments when the command runs, so the
// parsed word keeps the "$$" that then becomes "$" (systemd.service(5)).
// maxShownExec is the longest executable path (in bytes, before quoting)
// whose parse the fuzz target reads back from systemd-analyze's message;
// longer ones are only checked for raw line ends.
const maxShownExec = 200

// lineBreaks is a run of CRs and line feeds, which systemd's log shows as
// one line break.
var lineBreaks = regexp.MustCompile(`[\r\n]+`)

func FuzzSystemdArg(f *testing.F) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		missing(f, "systemd-analyze is not installed (hack/install-deps.sh)")
	}
	addSeeds(f)
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) || strings.IndexByte(s, 0) >= 0 || strings.IndexFunc(s, nonCharacter) >= 0 {
			if _, err := SystemdArg(s); err == nil {
				t.Fatalf("SystemdArg(%q) accepted invalid UTF-8, NUL or a noncharacter, which systemd refuses", s)
			}
			return
		}
		const prefix = "/nonexistent-machineadm-fuzz/x"
		// "/" would make other path segments; a suffix keeps a line end
		// off the end of the message, where systemd's log drops it.
		p := prefix + strings.ReplaceAll(s, "/", "_") + "_end"
		q, err := SystemdArg(p)
		if err != nil {
			t.Fatalf("SystemdArg(%q): %v", p, err)
		}
		unit := filepath.Join(dir, "fuzz.service")
		if err := os.WriteFile(unit, []byte("[Service]\nExecStart="+q+" arg\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		out, _ := exec.Command(analyze, "verify", "--man=no", "--generators=no", unit).CombinedOutput()
		// The quoted word is one line of the unit file whatever it holds:
		// no raw line end can start a directive of its own.
		if strings.ContainsAny(q, "\r\n") {
			t.Fatalf("SystemdArg(%q) = %q holds a raw line end", p, q)
		}
		if len(p) > maxShownExec {
			// systemd's log shortens a long message: what it parsed
			// cannot be read back whole.
			return
		}
		want := strings.ReplaceAll(p, "$", "$$")
		got, ok := parsedExec(string(out), prefix)
		if !ok {
			t.Fatalf("systemd did not parse ExecStart=%s (for %q):\n%s", q, s, out)
		}
		// systemd's log writes a message line by line: a run of CRs and
		// line feeds shows as one line break (it drops a CR before a line
		// feed, ends a line at a lone CR and skips empty lines). The unit's
		// own line holds no raw line end (checked above), so compare with
		// each run folded to one line feed.
		want, got = lineBreaks.ReplaceAllString(want, "\n"), lineBreaks.ReplaceAllString(got, "\n")
		if got != want {
			t.Fatalf("systemd parsed ExecStart=%s as %q, want %q", q, got, want)
		}
	})
}

// parsedExec cuts the executable systemd-analyze verify names out of its
// messages: "Command PATH is not executable: ..." or "Executable name
// contains special characters: PATH".
func parsedExec(out, prefix string) (string, bool) {
	if i := strings.Index(out, "Command "+prefix); i >= 0 {
		rest := out[i+len("Command "):]
		if j := strings.LastIndex(rest, " is not executable: "); j >= 0 {
			return rest[:j], true
		}
	}
	const special = "Executable name contains special characters: "
	if i := strings.Index(out, special+prefix); i >= 0 {
		rest := out[i+len(special):]
		if j := strings.LastIndex(rest, "\nfuzz.service: Unit configuration has fatal error"); j >= 0 {
			return rest[:j], true
		}
	}
	return "", false
}

func TestSystemdExecPath(t *testing.T) {
	for _, p := range []string{"/opt/bin/machineadm", "/usr/local/bin/m_1.2+x-y"} {
		if got, err := SystemdExecPath(p); err != nil || got != p {
			t.Errorf("SystemdExecPath(%q) = %q, %v", p, got, err)
		}
	}
	for _, p := range []string{"", "opt/bin/m", "/a b", "/a$b", "/a%b", "/a\nb", "/a//b", "/a/./b", "/a/../b", "/a/", "/a;b", `/a\b`, "/a'b"} {
		if _, err := SystemdExecPath(p); err == nil {
			t.Errorf("SystemdExecPath(%q) accepted", p)
		}
	}
}

func TestControlProblem(t *testing.T) {
	// The invisible format characters too: bidirectional overrides and
	// isolates (a reviewer of the user data sees the line reordered),
	// zero-width characters.
	for _, s := range []string{"\n", "a\x00b", "\r", "\x7f", "\u0085", "\u2028", "\u2029", "\ufeff", "\xff",
		"/opt/a\u202eb", "/opt/a\u202ab", "/opt/a\u2066b", "/opt/a\u2069b", "/opt/a\u200fb", "/opt/a\u200bb", "/opt/a\u061cb",
		"/opt/a\uffffb", "/opt/a\ufdd0b", "/opt/a\U0001fffeb"} {
		if ControlProblem(s) == "" {
			t.Errorf("ControlProblem(%q) accepts it", s)
		}
	}
	for _, s := range []string{"", "C:\\Program Files\\m.exe", "/opt/bin/m", "\u2019", "/opt/caf\u00e9/m", "/opt/a\u00a0b"} {
		if p := ControlProblem(s); p != "" {
			t.Errorf("ControlProblem(%q) = %q", s, p)
		}
	}
}
