package redact

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"testing"
)

type creds struct {
	User  string
	Token string
}

func TestHandlerRedactsEverything(t *testing.T) {
	s := newTestSecrets(t)
	r := New(s.token, s.certKey, s.caKey)
	for _, h := range []struct {
		name string
		make func(*bytes.Buffer) slog.Handler
	}{
		{"text", func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, nil) }},
		{"json", func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, nil) }},
	} {
		t.Run(h.name, func(t *testing.T) {
			var buf bytes.Buffer
			log := slog.New(r.NewHandler(h.make(&buf)))
			log = log.With("joinToken", s.token).WithGroup("g")
			log.Info("joining with --token "+s.token,
				"err", fmt.Errorf("discovery: %w", errors.New("bad token "+s.token)),
				"key", []byte(s.caKey),
				"certificateKey", s.certKey,
				"creds", creds{User: "u", Token: s.token},
				slog.Group("nested", "k", s.caKey, "n", 3),
				"count", 42,
			)
			out := buf.String()
			assertClean(t, h.name+" log", out, s.forbidden())
			if !bytes.Contains(buf.Bytes(), []byte("42")) || !bytes.Contains(buf.Bytes(), []byte(Placeholder)) {
				t.Errorf("log lost non-secret content or placeholder: %s", out)
			}
		})
	}
}

func TestHandlerKeepsNonSecretValues(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(New("topsecretvalue").NewHandler(slog.NewJSONHandler(&buf, nil)))
	log.Info("hello", "creds", creds{User: "alice"}, "n", 1.5)
	if want := `"creds":{"User":"alice","Token":""}`; !bytes.Contains(buf.Bytes(), []byte(want)) {
		t.Errorf("a value without secrets must keep its JSON form %s: %s", want, buf.String())
	}
	if !log.Enabled(t.Context(), slog.LevelInfo) || log.Enabled(t.Context(), slog.LevelDebug) {
		t.Error("Enabled must follow the wrapped handler")
	}
}
