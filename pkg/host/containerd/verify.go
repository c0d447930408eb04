package containerd

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// VerifyTimeout bounds one `containerd config dump`.
const VerifyTimeout = 10 * time.Second

// VerifyConfig checks config (a rendered config.toml) with containerd's
// own configuration loader and types: it runs `containerd --config F config
// dump` with the first containerd binary under root (the one that will
// read the file) on a private temporary copy. That command decodes the
// file into containerd's server configuration and every plugin's
// configuration struct (the CRI plugin's included), so a key of the wrong
// type fails as containerd itself would fail at start ("Can't convert
// x(string) to config.ContainerdConfig"). Nothing on the host is written
// besides the temporary file, which is removed.
//
// Errors: ErrNotInstalled without a binary (nothing was checked); a
// *ConfigError when containerd refuses the file, with containerd's
// message; others when the check itself could not run. It takes at most
// VerifyTimeout.
func VerifyConfig(ctx context.Context, root string, config []byte) error {
	bin, machinePath := "", ""
	for _, b := range binaries {
		if fi, err := os.Stat(filepath.Join(root, b)); err == nil && !fi.IsDir() {
			bin, machinePath = filepath.Join(root, b), b
			break
		}
	}
	if bin == "" {
		return ErrNotInstalled
	}
	dir, err := os.MkdirTemp("", "machineadm-containerd-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	f := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(f, config, 0o600); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, VerifyTimeout)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "--config", f, "config", "dump")
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		if _, exited := err.(*exec.ExitError); !exited || ctx.Err() != nil {
			return fmt.Errorf("%s config dump: %w", bin, err)
		}
		msg := strings.TrimSpace(stderr.String())
		if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
			msg = msg[i+1:]
		}
		msg = strings.TrimPrefix(strings.TrimPrefix(msg, "containerd: "), "failed to unmarshal TOML: ")
		return &ConfigError{Binary: machinePath, Msg: msg}
	}
	return nil
}

// ConfigError is a config.toml that containerd's own loader refuses.
type ConfigError struct {
	// Binary is the containerd that refused it, as a machine path.
	Binary string
	// Msg is containerd's message: "(3, 3): Can't convert x(string) to
	// config.ContainerdConfig" (line, column of the rendered file).
	Msg string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("the generated config.toml is refused by %s: %s", e.Binary, e.Msg)
}
