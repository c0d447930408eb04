//go:build !windows

package cpunits_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/machineadm/machineadm/internal/testfifo"
	"github.com/machineadm/machineadm/pkg/host/cpunits"
)

// TestCreateUsersNotRegularAccountsRefused: a root's /etc/passwd or
// /etc/group that is not a regular file (a FIFO in an image under
// --root DIR) is refused with an error naming it, at once, before
// anything is written: the check of existing accounts read it with
// os.ReadFile, whose open blocks until a writer comes (for ever).
func TestCreateUsersNotRegularAccountsRefused(t *testing.T) {
	for _, name := range []string{"passwd", "group"} {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{"passwd", "group"} {
				if f == name {
					testfifo.Make(t, filepath.Join(root, "etc", f))
				} else if err := os.WriteFile(filepath.Join(root, "etc", f), []byte("root:x:0:0::/root:/bin/sh\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			done := make(chan error, 1)
			go func() {
				_, err := cpunits.CreateUsers(t.Context(), root, []cpunits.Account{{Name: "etcd", Description: "etcd"}}, nil, true)
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), "/etc/"+name) || !strings.Contains(err.Error(), "not a regular file") {
					t.Errorf("CreateUsers with a FIFO at /etc/%s: %v; want it refused, not a regular file", name, err)
				}
			case <-time.After(30 * time.Second):
				if w, err := os.OpenFile(filepath.Join(root, "etc", name), os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
					w.Close()
				}
				<-done
				t.Fatalf("CreateUsers was still blocked on the FIFO at /etc/%s after 30 s", name)
			}
		})
	}
}
