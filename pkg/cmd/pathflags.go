package cmd

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/machineadm/machineadm/pkg/kubeadm/day2"
	"github.com/machineadm/machineadm/pkg/readlimit"
	"github.com/machineadm/machineadm/pkg/session"
)

// checkFileFlag refuses a flag's file path that names something other
// than a regular file (a FIFO, a device, a socket, a directory, or a
// symbolic link to one): reading a FIFO or a terminal blocks forever and
// a device never ends. The error is a usage error (exit code 2) naming
// the flag. A path that does not exist is left to the command, which
// says so in its own words (or uses its default).
func checkFileFlag(flag, path string) error {
	if path == "" {
		return nil
	}
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return session.Usagef("--%s %s: %v", flag, path, err)
	}
	if !fi.Mode().IsRegular() {
		return session.Usagef("--%s %s: must be a regular file, got %s", flag, path, readlimit.Describe(fi.Mode()))
	}
	return nil
}

// checkKubeconfigFlag refuses, before any work, an upgrade's --kubeconfig
// that was given and cannot be used: a path that does not exist, is not a
// regular file (checkFileFlag), or does not load as a kubeconfig (day2's
// RESTConfig: YAML, known kind and version, decodable credentials). The
// error is a usage error (exit code 2) naming the flag; it never quotes
// the file's content. Without the check the run went as far as the drain
// phase and failed there with exit code 1. The flag left out, or given
// as "", passes: the drain uses /etc/kubernetes/admin.conf. With
// --skip-drain (skipDrain) nothing reads the file, so only checkFileFlag
// applies, as before the check: the drain failure's hint is to run again
// with --skip-drain.
func checkKubeconfigFlag(cmd *cobra.Command, path string, skipDrain bool) error {
	if err := checkFileFlag("kubeconfig", path); err != nil || path == "" || skipDrain || !cmd.Flags().Changed("kubeconfig") {
		return err
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return session.Usagef("--kubeconfig %s: does not exist; %s", path, kubeconfigRemedy)
	}
	if _, err := day2.RESTConfig(path); err != nil {
		// RESTConfig's error starts with "kubeconfig PATH: ".
		if inner := errors.Unwrap(err); inner != nil {
			err = inner
		}
		return session.Usagef("--kubeconfig %s: does not load as a kubeconfig: %v; %s", path, err, kubeconfigRemedy)
	}
	return nil
}

// kubeconfigRemedy is what to do about an upgrade's --kubeconfig that
// cannot be used.
const kubeconfigRemedy = "give a kubeconfig that may cordon the node and evict its pods, leave the flag out on a control plane (/etc/kubernetes/admin.conf), or pass --skip-drain"

// checkOutFlag refuses, before any work, an output file path that cannot
// be written: an existing directory (or other non-regular file such as a
// FIFO or a device) or a path whose parent directory does not exist. The
// error is a usage error (exit code 2) naming the flag; "" and "-"
// (standard output) pass. Without it the command did all its work (render
// even said "rendered bootstrap data"), then failed with exit code 1 on
// the final rename. A symbolic link is refused too: the rename would
// replace the link, not write through it (/dev/stdout, with standard
// output redirected to a file, became a regular file for the whole
// machine).
func checkOutFlag(flag, path string) error {
	if path == "" || path == "-" {
		return nil
	}
	if li, err := os.Lstat(path); err == nil && li.Mode().Type() == fs.ModeSymlink {
		return session.Usagef("--%s %s: is a symbolic link, which writing the file would replace, not write through: give the file it names, or - for standard output", flag, path)
	}
	fi, err := os.Stat(path)
	switch {
	case err == nil && !fi.Mode().IsRegular():
		return session.Usagef("--%s %s: is %s, not a file", flag, path, readlimit.Describe(fi.Mode()))
	case err == nil:
		return nil
	case !errors.Is(err, fs.ErrNotExist):
		return session.Usagef("--%s %s: %v", flag, path, err)
	}
	dir := filepath.Dir(path)
	if di, err := os.Stat(dir); err != nil || !di.IsDir() {
		return session.Usagef("--%s %s: the directory %s does not exist", flag, path, dir)
	}
	return nil
}
