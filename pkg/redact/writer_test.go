package redact

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

// TestWriterEverySplit writes the leaky text in two pieces, split at every
// byte position, so every secret is cut between two Write calls once.
func TestWriterEverySplit(t *testing.T) {
	s := newTestSecrets(t)
	text := leakyText(s) + "\nunterminated " + s.token
	r := New(s.token, s.certKey, s.caKey)
	want := r.String(text)
	for i := 0; i <= len(text); i++ {
		var out bytes.Buffer
		w := r.NewWriter(&out)
		if _, err := io.WriteString(w, text[:i]); err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(w, text[i:]); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if out.String() != want {
			t.Fatalf("split at %d: got\n%s\nwant\n%s", i, out.String(), want)
		}
	}
	assertClean(t, "Writer", want, s.forbidden())
}

func TestWriterByteAtATime(t *testing.T) {
	s := newTestSecrets(t)
	text := leakyText(s) + "\r\nwindows line\r\n"
	r := New(s.token, s.certKey, s.caKey)
	var out bytes.Buffer
	w := r.NewWriter(&out)
	for i := range len(text) {
		w.Write([]byte{text[i]})
	}
	w.Close()
	assertClean(t, "Writer", out.String(), s.forbidden())
	if !strings.HasSuffix(out.String(), "windows line\r\n") {
		t.Errorf("CRLF not kept: %q", out.String()[len(out.String())-20:])
	}
}

func TestWriterHoldsUnterminatedLine(t *testing.T) {
	var out bytes.Buffer
	w := New("supersecretvalue").NewWriter(&out)
	io.WriteString(w, "partial supersecret")
	if out.Len() != 0 {
		t.Fatalf("unterminated line written before Close: %q", out.String())
	}
	io.WriteString(w, "value end")
	w.Close()
	if got := out.String(); got != "partial <redacted> end" {
		t.Errorf("got %q", got)
	}
}

func TestWriterLongLineCutAtBlank(t *testing.T) {
	secret := "verysecretvalue1"
	line := strings.Repeat("word ", MaxLineLen/5) + secret + " tail"
	var out bytes.Buffer
	w := New(secret).NewWriter(&out)
	io.WriteString(w, line)
	if out.Len() == 0 {
		t.Fatal("an over-long line was not flushed")
	}
	w.Close()
	if strings.Contains(out.String(), secret) {
		t.Error("secret in an over-long line leaked")
	}
	if got := strings.ReplaceAll(out.String(), Placeholder, secret); got != line {
		t.Error("over-long line was altered beyond the secret")
	}
}

type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	f.n++
	return 0, errors.New("disk full")
}

func TestWriterErrorSticks(t *testing.T) {
	fw := &failWriter{}
	w := New().NewWriter(fw)
	if _, err := io.WriteString(w, "a\n"); err == nil {
		t.Fatal("want the underlying error")
	}
	if _, err := io.WriteString(w, "b\n"); err == nil || fw.n != 1 {
		t.Fatalf("error must stick without new writes: err=%v writes=%d", err, fw.n)
	}
	if err := w.Close(); err == nil {
		t.Fatal("Close must report the error")
	}
}

func BenchmarkWriter(b *testing.B) {
	s := newTestSecrets(b)
	r := New(s.token, s.certKey, s.caKey)
	chunk := []byte(strings.Repeat("[kubelet-start] Writing kubelet configuration to file \"/var/lib/kubelet/config.yaml\"\n", 64))
	// The baseline splits the same output into lines and copies them,
	// without redacting: what any line-buffered writer costs.
	b.Run("baseline-lines", func(b *testing.B) {
		b.SetBytes(int64(len(chunk)))
		for b.Loop() {
			var out []byte
			for rest := chunk; len(rest) > 0; {
				i := bytes.IndexByte(rest, '\n')
				out = append(out, string(rest[:i+1])...)
				rest = rest[i+1:]
			}
			io.Discard.Write(out)
		}
	})
	b.Run("redact", func(b *testing.B) {
		w := r.NewWriter(io.Discard)
		b.SetBytes(int64(len(chunk)))
		for b.Loop() {
			w.Write(chunk)
		}
	})
}
