//go:build !windows

// Command fake-kms-plugin is a test double of a KMS v2 plugin for the
// end-to-end tests: it serves k8s.io/kms's v2 gRPC service
// (KeyManagementService) on a unix socket and encrypts data keys with
// AES-256-GCM under a key derived from a fixed test phrase, the same on
// every machine, so that every API server of a test cluster can read what
// another wrote. It is a fake: its key is public. Each call is logged to
// standard error ("fake-kms-plugin: encrypt #N"), which the tests read
// from the journal, and with --log-file appended to a file as well, which
// the tests read from the machine's root directory (a line there does not
// depend on journald storing it).
//
// Usage: fake-kms-plugin --socket /var/run/kmsplugin/socket.sock [--log-file /var/log/fake-kms-plugin.log]
package main

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"

	"k8s.io/kms/pkg/service"
)

// keyID names the plugin's one key.
const keyID = "machineadm-e2e-fake-key-1"

type fakeKMS struct {
	aead              cipher.AEAD
	encrypts, decrypt atomic.Int64
}

func (f *fakeKMS) Encrypt(_ context.Context, uid string, data []byte) (*service.EncryptResponse, error) {
	nonce := make([]byte, f.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	n := f.encrypts.Add(1)
	log.Printf("fake-kms-plugin: encrypt #%d (uid %s, %d bytes)", n, uid, len(data))
	return &service.EncryptResponse{Ciphertext: f.aead.Seal(nonce, nonce, data, nil), KeyID: keyID}, nil
}

func (f *fakeKMS) Decrypt(_ context.Context, uid string, req *service.DecryptRequest) ([]byte, error) {
	n := f.decrypt.Add(1)
	log.Printf("fake-kms-plugin: decrypt #%d (uid %s, key %s)", n, uid, req.KeyID)
	if req.KeyID != keyID {
		return nil, fmt.Errorf("unknown key %q", req.KeyID)
	}
	ns := f.aead.NonceSize()
	if len(req.Ciphertext) < ns {
		return nil, errors.New("ciphertext too short")
	}
	return f.aead.Open(nil, req.Ciphertext[:ns], req.Ciphertext[ns:], nil)
}

func (f *fakeKMS) Status(context.Context) (*service.StatusResponse, error) {
	return &service.StatusResponse{Version: "v2", Healthz: "ok", KeyID: keyID}, nil
}

// bothWriter writes each line to both of its writers, the second even
// when the first fails (io.MultiWriter stops at the first error: a log
// file that cannot be written, a full disk, would have kept the line from
// the journal too, which the tests compare the file with).
type bothWriter struct{ a, b io.Writer }

func (w bothWriter) Write(p []byte) (int, error) {
	_, errA := w.a.Write(p)
	n, errB := w.b.Write(p)
	if errB != nil {
		return n, errB
	}
	if errA != nil {
		return len(p), errA
	}
	return len(p), nil
}

func main() {
	socket := flag.String("socket", "/var/run/kmsplugin/socket.sock", "unix socket to serve on")
	logFile := flag.String("log-file", "", "also append each log line to this file (unbuffered), which the tests read without journald")
	flag.Parse()
	log.SetFlags(0)
	if *logFile != "" {
		f, err := os.OpenFile(*logFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			log.Fatal(err)
		}
		log.SetOutput(bothWriter{f, os.Stderr})
	}
	key := sha256.Sum256([]byte("machineadm e2e fake KMS plugin: a public test key"))
	block, err := aes.NewCipher(key[:])
	if err != nil {
		log.Fatal(err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(*socket), 0o755); err != nil {
		log.Fatal(err)
	}
	_ = os.Remove(*socket)
	// Any local account may connect: the Systemd runtime's API server runs
	// as kubeadm-kas. (A real plugin would grant that account alone.)
	syscall.Umask(0)
	s := service.NewGRPCService(*socket, 10*time.Second, &fakeKMS{aead: aead})
	go func() {
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT)
		<-ch
		s.Shutdown()
	}()
	log.Printf("fake-kms-plugin: serving KMS v2 on %s", *socket)
	if err := s.ListenAndServe(); err != nil {
		log.Fatal(err)
	}
}
