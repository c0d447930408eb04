//go:build e2e

package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ignitionBinary is the real Ignition of Debian's ignition package (2.14,
// config spec up to 3.3.0), which its dracut module runs in the initramfs.
const (
	ignitionBinary  = "/usr/lib/dracut/modules.d/30ignition/ignition"
	ignitionVersion = "3.3.0"
	agentPath       = "/opt/bin/machineadm" // render.IgnitionAgentPath
)

// scenarioIgnition: workers provisioned by the real Ignition binary from
// `machineadm render --format ignition` output, as on Flatcar and Fedora
// CoreOS. The harness plays the initramfs: Ignition's fetch-offline and
// files stages run on the machine's root filesystem (--root) before its
// first boot; then the machine boots, systemd applies Ignition's preset
// (first boot), machineadm.service runs and the node joins.
//   - w5: the spec inline in the config; Ignition downloads the agent and
//     checks its hash.
//   - w6: the spec fetched by Ignition from --payload-url.
//   - w7: a tampered agent. Served at the agent URL, Ignition's files stage
//     refuses it (hash mismatch) and installs nothing; replaced on disk
//     after Ignition installed the genuine one, machineadm.service's
//     ExecStartPre refuses it at boot: machineadm never runs, no report,
//     no Node.
func scenarioIgnition(ctx context.Context, t *testing.T, e *env, c *cluster) {
	if _, err := os.Stat(ignitionBinary); err != nil {
		fatalf(t, "the real Ignition binary is missing (Debian package ignition): %v", err)
	}
	agent, err := os.ReadFile(e.machineadm)
	if err != nil {
		fatalln(t, err)
	}
	sum := sha256.Sum256(agent)
	digest := hex.EncodeToString(sum[:])
	tampered := append(append([]byte{}, agent...), []byte("tampered")...)
	srv, err := startAgentServer(map[string][]byte{"/machineadm": agent, "/tampered/machineadm": tampered})
	if err != nil {
		fatalln(t, err)
	}
	defer srv.close()

	inline := e.render(ctx, t, w5, "ignition", srv.url("/machineadm"), digest, nil, "--ignition-version", ignitionVersion)
	checkIgnitionVersion(t, inline)
	// The spec served at the payload URL: exactly the file render reads
	// (render computes --payload-sha256 from it).
	w6Spec, err := specYAML(workerSpec(w6, mustCAHash(t, e)))
	if err != nil {
		fatalln(t, err)
	}
	srv.add("/specs/w6.yaml", w6Spec)
	payload := e.render(ctx, t, w6, "ignition", srv.url("/machineadm"), digest, nil,
		"--ignition-version", ignitionVersion, "--payload-url", srv.url("/specs/w6.yaml"))
	if strings.Contains(string(payload), "gzip") {
		errorf(t, "the --payload-url config still carries the spec inline")
	}
	configs := map[string][]byte{w5.Name: inline, w6.Name: payload}

	start := time.Now()
	ms := e.bootMachinesWith(ctx, t, bootOptions{withoutAgent: true, prepare: func(m *Machine) error {
		if err := m.WriteFile(machineTokenFile, []byte(c.secrets.token+"\n"), 0o600); err != nil {
			return err
		}
		if err := prepareFirstBoot(m); err != nil {
			return err
		}
		out, err := runIgnition(ctx, m, configs[m.Name])
		if err != nil {
			return fmt.Errorf("ignition: %w\n%s", err, tail(out, 30))
		}
		return checkIgnitionWrote(m)
	}}, w5, w6)
	ready, err := waitNodesReady(ctx, c.cs, readyTimeout, w5.Name, w6.Name)
	if err != nil {
		dumpDiagnostics(ctx, t, ms...)
		for _, m := range ms {
			res, _ := m.Exec(ctx, nil, "journalctl", "--no-pager", "-n", "40", "-u", "machineadm.service")
			t.Logf("%s machineadm.service:\n%s", m.Name, res.Stdout)
		}
		fatalln(t, err)
	}
	timing(t, "w5-w6-ignition-to-node-ready", time.Since(start))
	for _, m := range ms {
		t.Logf("%s Ready after %s", m.Name, ready[m.Name].Sub(start).Round(time.Second))
		checkUnitRan(ctx, t, m)
		checkReport(t, m, workerJoinPhases)
	}
	if srv.count("/specs/w6.yaml") == 0 {
		errorf(t, "w6 joined without Ignition fetching its spec from the payload URL")
	}
	if n := srv.count("/machineadm"); n < 2 {
		errorf(t, "Ignition fetched the agent %d times for two machines", n)
	}

	// w7: the tampered agent.
	mw7 := e.bootMachinesWith(ctx, t, bootOptions{withoutAgent: true, mayDegrade: true, prepare: func(m *Machine) error {
		if err := m.WriteFile(machineTokenFile, []byte(c.secrets.token+"\n"), 0o600); err != nil {
			return err
		}
		if err := prepareFirstBoot(m); err != nil {
			return err
		}
		bad := e.render(ctx, t, w7, "ignition", srv.url("/tampered/machineadm"), digest, nil, "--ignition-version", ignitionVersion)
		out, err := runIgnition(ctx, m, bad)
		if err == nil {
			return fmt.Errorf("ignition installed a tampered agent:\n%s", tail(out, 20))
		}
		if !strings.Contains(out, "hash") {
			errorf(t, "Ignition's refusal does not name the hash:\n%s", tail(out, 20))
		}
		t.Logf("Ignition refused the tampered download: %s", lastLine(out, "CRITICAL"))
		if _, err := os.Stat(filepath.Join(m.Root, agentPath)); err == nil {
			return fmt.Errorf("a refused download left %s", agentPath)
		}
		good := e.render(ctx, t, w7, "ignition", srv.url("/machineadm"), digest, nil, "--ignition-version", ignitionVersion)
		if out, err := runIgnition(ctx, m, good); err != nil {
			return fmt.Errorf("ignition: %w\n%s", err, tail(out, 30))
		}
		if err := checkIgnitionWrote(m); err != nil {
			return err
		}
		// The image is modified after provisioning: same size, other bytes.
		p := filepath.Join(m.Root, agentPath)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		b[len(b)/2] ^= 0xff
		return os.WriteFile(p, b, 0o755)
	}}, w7)[0]
	res, _ := mw7.Exec(ctx, nil, "systemctl", "show", "machineadm.service", "-p", "ActiveState", "-p", "Result", "-p", "ExecMainStartTimestampMonotonic")
	t.Logf("w7 machineadm.service: %s", strings.Join(strings.Fields(res.Stdout), " "))
	if !strings.Contains(res.Stdout, "ActiveState=failed") || !strings.Contains(res.Stdout, "ExecMainStartTimestampMonotonic=0") {
		errorf(t, "w7: machineadm.service did not fail before its main process started:\n%s", res.Stdout)
	}
	jr, _ := mw7.Exec(ctx, nil, "journalctl", "--no-pager", "-u", "machineadm.service")
	if !strings.Contains(jr.Stdout, "FAILED") {
		errorf(t, "w7: no sha256sum refusal in the unit's journal:\n%s", tail(jr.Stdout, 20))
	}
	for _, p := range []string{reportPath, "/etc/kubernetes/kubelet.conf", "/var/lib/kubelet/config.yaml"} {
		if _, err := os.Stat(filepath.Join(mw7.Root, p)); err == nil {
			errorf(t, "w7: %s exists although the agent was refused", p)
		}
	}
	if _, err := c.cs.CoreV1().Nodes().Get(ctx, w7.Name, metav1.GetOptions{}); err == nil {
		errorf(t, "w7 registered a Node with a tampered agent")
	}
	if err := e.stopMachine(mw7); err != nil {
		errorln(t, err)
	}
}

// checkIgnitionVersion checks the rendered config asks for a spec version
// Ignition 2.14 reads (it accepts up to 3.3.0; the renderer's default,
// 3.4.0, it would refuse).
func checkIgnitionVersion(t *testing.T, cfg []byte) {
	t.Helper()
	if !strings.Contains(string(cfg), `"version":"`+ignitionVersion+`"`) {
		errorf(t, "rendered config lacks ignition.version %s: %.200s", ignitionVersion, cfg)
	}
}

// prepareFirstBoot makes the machine's next boot its first, as a freshly
// provisioned CoreOS or Flatcar disk is: /etc/machine-id "uninitialized"
// (machine-id(5)), so systemd applies the presets Ignition wrote. The
// console prompts of systemd-firstboot (Debian's, absent on those
// systems) are masked, and the root gets the SELinux configuration
// Ignition's files stage insists on: SELinux disabled, a policy with no
// file contexts, so its relabel step runs Debian's setfiles and labels
// nothing.
func prepareFirstBoot(m *Machine) error {
	if err := m.WriteFile("/etc/machine-id", []byte("uninitialized\n"), 0o444); err != nil {
		return err
	}
	if err := os.Symlink("/dev/null", filepath.Join(m.Root, "etc/systemd/system/systemd-firstboot.service")); err != nil && !os.IsExist(err) {
		return err
	}
	if err := m.WriteFile("/etc/selinux/config", []byte("SELINUX=disabled\nSELINUXTYPE=e2e\n"), 0o644); err != nil {
		return err
	}
	return m.WriteFile("/etc/selinux/e2e/contexts/files/file_contexts", nil, 0o644)
}

// runIgnition runs the real Ignition's fetch-offline and files stages on
// the machine's root with the config as the "file" platform's user data,
// its cache and state in the machine directory. It returns their log.
func runIgnition(ctx context.Context, m *Machine, cfg []byte) (string, error) {
	dir := filepath.Join(m.Dir, "ignition")
	_ = os.RemoveAll(dir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	cfgFile := filepath.Join(dir, "config.ign")
	if err := os.WriteFile(cfgFile, cfg, 0o600); err != nil {
		return "", err
	}
	var log strings.Builder
	for _, stage := range []string{"fetch-offline", "files"} {
		sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		cmd := exec.CommandContext(sctx, ignitionBinary, "--platform", "file", "--stage", stage,
			"--root", m.Root, "--config-cache", filepath.Join(dir, "ignition.json"),
			"--state-file", filepath.Join(dir, "state"), "--neednet", filepath.Join(dir, "neednet"),
			"--log-to-stdout")
		cmd.Env = append(os.Environ(), "IGNITION_CONFIG_FILE="+cfgFile)
		out, err := cmd.CombinedOutput()
		cancel()
		log.Write(out)
		_ = os.WriteFile(filepath.Join(dir, stage+".log"), out, 0o600)
		if err != nil {
			return log.String(), fmt.Errorf("stage %s: %w", stage, err)
		}
	}
	return log.String(), nil
}

// checkIgnitionWrote checks what Ignition's files stage left in the root:
// the agent, the spec (0600), machineadm.service with its verify drop-in,
// and the preset that enables the unit.
func checkIgnitionWrote(m *Machine) error {
	for p, mode := range map[string]os.FileMode{
		agentPath: 0o755, machineSpecFile: 0o600,
		"/etc/systemd/system/machineadm.service":                        0o644,
		"/etc/systemd/system/machineadm.service.d/10-verify-agent.conf": 0o644,
	} {
		fi, err := os.Stat(filepath.Join(m.Root, p))
		if err != nil {
			return fmt.Errorf("after Ignition: %w", err)
		}
		if fi.Mode().Perm() != mode {
			return fmt.Errorf("after Ignition: %s has mode %o, want %o", p, fi.Mode().Perm(), mode)
		}
	}
	preset, err := m.ReadFile("/etc/systemd/system-preset/20-ignition.preset")
	if err != nil || !strings.Contains(string(preset), "enable machineadm.service") {
		return fmt.Errorf("after Ignition: no preset enabling machineadm.service (%q, %v)", preset, err)
	}
	if _, err := os.Lstat(filepath.Join(m.Root, "etc/systemd/system/multi-user.target.wants/machineadm.service")); err == nil {
		return fmt.Errorf("machineadm.service enabled before the first boot: only the preset may enable it")
	}
	return nil
}

// checkUnitRan checks that systemd enabled machineadm.service from the
// preset at first boot and that it ran to success.
func checkUnitRan(ctx context.Context, t *testing.T, m *Machine) {
	t.Helper()
	if _, err := os.Lstat(filepath.Join(m.Root, "etc/systemd/system/multi-user.target.wants/machineadm.service")); err != nil {
		errorf(t, "%s: machineadm.service not enabled by the first-boot preset: %v", m.Name, err)
	}
	res, err := m.Exec(ctx, nil, "systemctl", "show", "machineadm.service", "-p", "ActiveState", "-p", "Result", "-p", "ExecMainStatus")
	if err != nil || !strings.Contains(res.Stdout, "ActiveState=active") || !strings.Contains(res.Stdout, "Result=success") || !strings.Contains(res.Stdout, "ExecMainStatus=0") {
		errorf(t, "%s: machineadm.service: %q %v", m.Name, res.Stdout, err)
	}
}

// lastLine returns the last line of s containing sub.
func lastLine(s, sub string) string {
	lines := strings.Split(s, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], sub) {
			return strings.TrimSpace(lines[i])
		}
	}
	return ""
}
