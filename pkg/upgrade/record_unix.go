//go:build !windows

package upgrade

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// checkRecordAccess refuses a record that someone other than its writer
// may have changed: one that group or others may write, or that is owned
// by another user than root or the effective user. machineadm writes it
// root-owned with mode 0600 (Write); the plan trusts it to say what the
// node runs.
func checkRecordAccess(fi fs.FileInfo) error {
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return fmt.Errorf("mode %04o: group or others may write it", perm)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("cannot read its owner")
	}
	if st.Uid != 0 && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("owned by uid %d, not root", st.Uid)
	}
	return nil
}
