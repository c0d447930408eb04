package machineadm

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
)

func gz(t *testing.T, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestDecodeContent(t *testing.T) {
	for _, tc := range []struct{ content, enc, want string }{
		{"plain", "", "plain"},
		{"aGVsbG8=\n", "base64", "hello"},
		{"aGVs\nbG8=", "base64", "hello"},
		{base64.StdEncoding.EncodeToString(gz(t, []byte("zipped"))), "gzip+base64", "zipped"},
	} {
		got, err := DecodeContent(tc.content, tc.enc)
		if err != nil || string(got) != tc.want {
			t.Errorf("DecodeContent(%q, %q) = %q, %v; want %q", tc.content, tc.enc, got, err, tc.want)
		}
	}
	for _, bad := range []struct{ content, enc string }{
		{"x", "rot13"},
		{"not base64!", "base64"},
		{"aGVsbG8=", "gzip+base64"}, // base64, but not gzip
	} {
		if _, err := DecodeContent(bad.content, bad.enc); err == nil {
			t.Errorf("DecodeContent(%q, %q): want an error", bad.content, bad.enc)
		}
	}
}

// TestDecodeContentBounded: exactly MaxContentBytes decodes; one byte
// more is ErrContentTooLarge, for a gzip bomb as for plain and base64
// content.
func TestDecodeContentBounded(t *testing.T) {
	zeros := make([]byte, MaxContentBytes+1)
	bomb := base64.StdEncoding.EncodeToString(gz(t, zeros))
	if len(bomb) > 200<<10 {
		t.Fatalf("bomb of %d bytes; want a small one", len(bomb))
	}
	if _, err := DecodeContent(bomb, EncodingGzipBase64); !errors.Is(err, ErrContentTooLarge) || !strings.Contains(err.Error(), "64 MiB") {
		t.Errorf("gzip bomb: err = %v, want ErrContentTooLarge naming 64 MiB", err)
	}
	ok := base64.StdEncoding.EncodeToString(gz(t, zeros[:MaxContentBytes]))
	if got, err := DecodeContent(ok, EncodingGzipBase64); err != nil || len(got) != MaxContentBytes {
		t.Errorf("gzip of exactly MaxContentBytes: %d bytes, %v", len(got), err)
	}
	if _, err := DecodeContent(base64.StdEncoding.EncodeToString(zeros), EncodingBase64); !errors.Is(err, ErrContentTooLarge) {
		t.Errorf("large base64: err = %v, want ErrContentTooLarge", err)
	}
	if _, err := DecodeContent(string(zeros), EncodingPlain); !errors.Is(err, ErrContentTooLarge) {
		t.Errorf("large plain content: err = %v, want ErrContentTooLarge", err)
	}
}
