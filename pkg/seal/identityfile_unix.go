//go:build !windows

package seal

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// openFlags open an identity file without following a symbolic link and
// without blocking: opening a FIFO would wait for a writer forever; with
// O_NONBLOCK the open returns and the regular-file check refuses it. With
// O_NOCTTY a terminal there does not become the controlling terminal of a
// run that leads its session without one (a systemd service).
const openFlags = syscall.O_NOFOLLOW | syscall.O_NONBLOCK | syscall.O_NOCTTY

// checkAccess accepts mode 0600 files owned by root or by the effective
// user.
func checkAccess(fi fs.FileInfo) error {
	if perm := fi.Mode().Perm(); perm != 0o600 {
		return fmt.Errorf("mode %04o, must be 0600", perm)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("cannot read the owner")
	}
	if st.Uid != 0 && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("owned by uid %d, must be owned by root", st.Uid)
	}
	return nil
}
