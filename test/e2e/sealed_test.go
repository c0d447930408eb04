//go:build e2e

package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
	"github.com/machineadm/machineadm/pkg/apis/machineadm/v1alpha1"
)

// machineIdentityFile is where a machine's image keeps the identity that
// opens its sealed secrets (machineadm's default).
const machineIdentityFile = "/etc/machineadm/identity"

// TestSealed is the sealed-secrets scenario (issue 10), on a cluster of its
// own:
//   - cp1 boots from cloud-init user data rendered from a sealed
//     control-plane-init spec (CA set, bootstrap token and certificate key
//     sealed to the hpke identity in cp1's image; the agent downloaded
//     from a URL and checked by digest) and initialises the cluster;
//   - w1 joins from sealed cloud-init user data (agent in the image);
//   - w3, whose image lacks its key, fails with VerificationFailed in its
//     report and its host is unchanged;
//   - no rendered user data holds a PEM private key, the token or the
//     certificate key, raw, in base64 or in gzip+base64.
//
// The machines of TestScenarios (same names and addresses) are stopped
// first.
func TestSealed(t *testing.T) {
	e := theEnv
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	stopAllMachines(t, e)
	start := time.Now()

	secrets, err := e.makeSecrets(ctx, filepath.Join(e.runDir, "sealed-pki"))
	if err != nil {
		fatalln(t, err)
	}
	// The trusted side: the secret files below a staging root, as the spec
	// names them, and one identity per machine image.
	stage := filepath.Join(e.runDir, "sealed-stage")
	for path, data := range map[string][]byte{
		machineTokenFile:   []byte(secrets.token + "\n"),
		machineCertKeyFile: []byte(secrets.certKey + "\n"),
	} {
		writeStaged(t, stage, path, data)
	}
	copyTree(t, secrets.pkiDir, filepath.Join(stage, machinePKIDir))
	ids := map[string]string{}
	recipients := map[string]string{}
	for _, n := range []string{cp1.Name, w1.Name, w3.Name} {
		ids[n] = filepath.Join(e.runDir, "identity-"+n)
		out, err := exec.CommandContext(ctx, e.machineadm, "keygen", "--type", "hpke", "--out", ids[n]).Output()
		if err != nil {
			fatalf(t, "machineadm keygen: %v", exitDetail(err))
		}
		recipients[n] = strings.TrimSpace(string(out))
	}

	agent, err := os.ReadFile(e.machineadm)
	if err != nil {
		fatalln(t, err)
	}
	sum := sha256.Sum256(agent)
	digest := hex.EncodeToString(sum[:])
	srv, err := startAgentServer(map[string][]byte{"/machineadm": agent})
	if err != nil {
		fatalln(t, err)
	}
	defer srv.close()

	cpSpec := controlPlaneSpec(cp1, v1alpha1.ActionInit, "")
	// cp1's is gzip-compressed whole (render --gzip): cloud-init itself
	// decompresses it.
	cpData := e.sealAndRender(ctx, t, cp1, cpSpec, stage, recipients[cp1.Name], srv.url("/machineadm"), digest, "--gzip")
	if !bytes.HasPrefix(cpData, []byte{0x1f, 0x8b}) {
		fatalln(t, "render --gzip did not write gzip")
	}
	wData := e.sealAndRender(ctx, t, w1, workerSpec(w1, secrets.caHash), stage, recipients[w1.Name], "file:///usr/local/bin/machineadm", "")
	w3Data := e.sealAndRender(ctx, t, w3, workerSpec(w3, secrets.caHash), stage, recipients[w3.Name], "file:///usr/local/bin/machineadm", "")

	// No secret in any rendered user data, in any form.
	forbidden := map[string]string{"bootstrap token": secrets.token, "token secret": strings.Split(secrets.token, ".")[1], "certificate key": secrets.certKey}
	for _, name := range machineadm.CAKeyFiles {
		b, err := os.ReadFile(filepath.Join(secrets.pkiDir, name))
		if err != nil {
			fatalln(t, err)
		}
		forbidden["CA key "+name] = string(b)
	}
	for name, data := range map[string][]byte{"cp1": cpData, "w1": wData, "w3": w3Data} {
		if what := findSecrets(data, forbidden); what != "" {
			fatalf(t, "%s user data holds %s", name, what)
		}
	}

	// cp1: cloud-init runs the stub, which downloads the agent; the
	// envelope opens with the identity in the image.
	cpStart := time.Now()
	mcp1 := e.bootMachinesWith(ctx, t, bootOptions{withoutAgent: true, prepare: func(m *Machine) error {
		if err := placeIdentity(m, ids[cp1.Name]); err != nil {
			return err
		}
		return enableCloudInit(m, cpData)
	}}, cp1)[0]
	if err := waitFile(ctx, mcp1, "etc/kubernetes/admin.conf", bootstrapTimeout); err != nil {
		logCloudInit(ctx, t, mcp1)
		fatalln(t, err)
	}
	cs, err := adminClient(mcp1)
	if err != nil {
		fatalln(t, err)
	}
	ready, err := waitNodesReady(ctx, cs, bootstrapTimeout, cp1.Name)
	if err != nil {
		logCloudInit(ctx, t, mcp1)
		dumpDiagnostics(ctx, t, mcp1)
		fatalln(t, err)
	}
	timing(t, "sealed-cp1-boot-to-node-ready", ready[cp1.Name].Sub(cpStart))
	if srv.count("/machineadm") == 0 {
		errorln(t, "cp1 became Ready without downloading the agent")
	}
	if err := waitFile(ctx, mcp1, strings.TrimPrefix(reportPath, "/"), time.Minute); err != nil {
		fatalln(t, err)
	}
	checkReport(t, mcp1, initPhases)
	checkOpenedBy(t, mcp1, "hpke")
	if err := waitStaticPodsRunning(ctx, cs, cp1.Name, podTimeout); err != nil {
		dumpDiagnostics(ctx, t, mcp1)
		fatalln(t, err)
	}
	// kubeadm signed the cluster with the sealed CA: the same ca.crt.
	want, _ := os.ReadFile(filepath.Join(secrets.pkiDir, "ca.crt"))
	if got, err := mcp1.ReadFile("/etc/kubernetes/pki/ca.crt"); err != nil || !bytes.Equal(got, want) {
		errorf(t, "cp1's ca.crt is not the sealed CA (%v)", err)
	}

	// w1 joins from sealed user data, agent in the image.
	wStart := time.Now()
	mw1 := e.bootMachinesWith(ctx, t, bootOptions{prepare: func(m *Machine) error {
		if err := placeIdentity(m, ids[w1.Name]); err != nil {
			return err
		}
		return enableCloudInit(m, wData)
	}}, w1)[0]
	ready, err = waitNodesReady(ctx, cs, bootstrapTimeout, w1.Name)
	if err != nil {
		logCloudInit(ctx, t, mw1)
		dumpDiagnostics(ctx, t, mw1)
		fatalln(t, err)
	}
	timing(t, "sealed-w1-boot-to-node-ready", ready[w1.Name].Sub(wStart))
	if err := waitFile(ctx, mw1, strings.TrimPrefix(reportPath, "/"), time.Minute); err != nil {
		fatalln(t, err)
	}
	checkReport(t, mw1, workerJoinPhases)
	checkOpenedBy(t, mw1, "hpke")

	// w3: an image without the key. The sealed spec is where cloud-init
	// would write it; bootstrap must refuse before touching the host.
	mw3 := e.bootMachines(ctx, t, w3)[0]
	sealedW3 := specFromUserData(t, w3Data)
	if err := mw3.WriteFile(machineSpecFile, sealedW3, 0o600); err != nil {
		fatalln(t, err)
	}
	before := snapshot(t, mw3)
	res, dur := bootstrap(ctx, t, mw3)
	timing(t, "sealed-w3-bootstrap-without-key", dur)
	if res.ExitCode == 0 {
		errorf(t, "w3 bootstrapped without its key")
	}
	r, raw, err := readReport(mw3)
	if err != nil {
		fatalln(t, err)
	}
	t.Logf("w3 report: %s", r.summary())
	if r.Result != "Failed" || r.ErrorClass != "VerificationFailed" {
		errorf(t, "w3 report result=%s errorClass=%s, want Failed VerificationFailed\n%s", r.Result, r.ErrorClass, raw)
	}
	if after := snapshot(t, mw3); after != before {
		errorf(t, "w3's host changed after the refused envelope:\n--- before\n%s\n--- after\n%s", before, after)
	}
	for _, s := range forbidden {
		if strings.Contains(string(raw), s) {
			errorln(t, "w3's report holds a secret")
		}
	}
	timing(t, "sealed-scenario", time.Since(start))
}

// stopAllMachines stops the machines earlier tests left running: this
// scenario uses the same names and addresses.
func stopAllMachines(t *testing.T, e *env) {
	e.mu.Lock()
	ms := append([]*Machine(nil), e.machines...)
	e.mu.Unlock()
	for _, m := range ms {
		if err := e.stopMachine(m); err != nil {
			fatalf(t, "stopping %s: %v", m.Name, err)
		}
		// A machine booted again under the same name must start from the
		// image, not from what the earlier test left in its overlay (an
		// earlier cluster's /etc/kubernetes/pki): move its directory aside
		// (cleanup removes the run directory).
		dir := filepath.Join(e.runDir, m.Name)
		if err := os.Rename(dir, unusedPath(dir+".earlier")); err != nil && !os.IsNotExist(err) {
			fatalf(t, "moving %s aside: %v", dir, err)
		}
	}
}

// sealAndRender writes node's spec, seals it on the host with `machineadm
// seal --root stage --recipient R` and renders the sealed file as
// cloud-config (--max-size aws) with `machineadm render`, without
// --insecure-inline-secrets.
func (e *env) sealAndRender(ctx context.Context, t *testing.T, node hostsEntry, s *machineadm.MachineBootstrapConfig, stage, recipient, agentURL, digest string, renderArgs ...string) []byte {
	t.Helper()
	y, err := specYAML(s)
	if err != nil {
		fatalln(t, err)
	}
	dir := filepath.Join(e.runDir, "sealed-"+node.Name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		fatalln(t, err)
	}
	plain, sealed, out := filepath.Join(dir, "spec.yaml"), filepath.Join(dir, "spec.sealed.yaml"), filepath.Join(dir, "user-data")
	if err := os.WriteFile(plain, y, 0o600); err != nil {
		fatalln(t, err)
	}
	if b, err := exec.CommandContext(ctx, e.machineadm, "seal", "-f", plain, "--root", stage, "--recipient", recipient, "-o", sealed).CombinedOutput(); err != nil {
		fatalf(t, "machineadm seal for %s: %v\n%s", node.Name, err, b)
	}
	args := []string{"render", "-f", sealed, "--format", "cloud-config", "--agent-url", agentURL, "--max-size", "aws", "-o", out}
	if digest != "" {
		args = append(args, "--agent-sha256", digest)
	}
	args = append(args, renderArgs...)
	if b, err := exec.CommandContext(ctx, e.machineadm, args...).CombinedOutput(); err != nil {
		fatalf(t, "machineadm render for %s: %v\n%s", node.Name, err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		fatalln(t, err)
	}
	t.Logf("sealed cloud-config for %s: %d bytes", node.Name, len(b))
	return b
}

func writeStaged(t *testing.T, root, path string, data []byte) {
	t.Helper()
	p := filepath.Join(root, path)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		fatalln(t, err)
	}
	if err := os.WriteFile(p, data, 0o600); err != nil {
		fatalln(t, err)
	}
}

func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		writeStaged(t, dst, rel, b)
		return nil
	})
	if err != nil {
		fatalln(t, err)
	}
}

// placeIdentity puts the identity into the machine's image, root-owned
// and 0600, where machineadm looks by default.
func placeIdentity(m *Machine, file string) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	return m.WriteFile(machineIdentityFile, b, 0o600)
}

// pemPrivateKeyRE matches any PEM private key header.
var pemPrivateKeyRE = regexp.MustCompile(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----`)

// findSecrets names what of forbidden (or any PEM private key) appears in
// data, or in what data decodes to: each base64 run of data is decoded
// and, when it is gzip, decompressed, recursively (cloud-config's gz+b64
// write_files, the stub's heredocs).
func findSecrets(data []byte, forbidden map[string]string) string {
	var search func(b []byte, depth int) string
	search = func(b []byte, depth int) string {
		if pemPrivateKeyRE.Match(b) {
			return "a PEM private key"
		}
		for name, s := range forbidden {
			for _, form := range secretForms(s) {
				if bytes.Contains(b, []byte(form)) {
					return name
				}
			}
		}
		if depth == 0 {
			return ""
		}
		if zr, err := gzip.NewReader(bytes.NewReader(b)); err == nil { // gzip user data (render --gzip)
			var out bytes.Buffer
			if _, err := out.ReadFrom(zr); err == nil {
				return search(out.Bytes(), depth-1)
			}
		}
		for _, run := range base64Runs.FindAll(b, -1) {
			dec, err := base64.StdEncoding.DecodeString(string(bytes.Join(bytes.Fields(run), nil)))
			if err != nil {
				continue
			}
			if zr, err := gzip.NewReader(bytes.NewReader(dec)); err == nil {
				var out bytes.Buffer
				if _, err := out.ReadFrom(zr); err == nil {
					dec = out.Bytes()
				}
			}
			if what := search(dec, depth-1); what != "" {
				return what
			}
		}
		return ""
	}
	return search(data, 3)
}

// base64Runs are runs of base64 characters long enough to hide a secret.
var base64Runs = regexp.MustCompile(`[A-Za-z0-9+/=\n]{24,}`)

// secretForms are a secret raw, in base64 and in gzip+base64 (both gzip
// levels the tools use).
func secretForms(s string) []string {
	forms := []string{s, base64.StdEncoding.EncodeToString([]byte(s))}
	for _, level := range []int{gzip.DefaultCompression, gzip.BestCompression} {
		var gz bytes.Buffer
		w, _ := gzip.NewWriterLevel(&gz, level)
		w.Write([]byte(s))
		w.Close()
		forms = append(forms, base64.StdEncoding.EncodeToString(gz.Bytes()))
	}
	return forms
}

// specFromUserData is the spec file the cloud-config writes (its
// write_files entry for machineSpecFile, gz+b64).
func specFromUserData(t *testing.T, userData []byte) []byte {
	t.Helper()
	lines := strings.Split(string(userData), "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) != "- path: "+machineSpecFile {
			continue
		}
		for _, c := range lines[i+1:] {
			if v, ok := strings.CutPrefix(strings.TrimSpace(c), "content: "); ok {
				raw, err := base64.StdEncoding.DecodeString(v)
				if err != nil {
					fatalln(t, err)
				}
				zr, err := gzip.NewReader(bytes.NewReader(raw))
				if err != nil {
					fatalln(t, err)
				}
				var out bytes.Buffer
				if _, err := out.ReadFrom(zr); err != nil {
					fatalln(t, err)
				}
				return out.Bytes()
			}
		}
	}
	fatalf(t, "the user data writes no %s", machineSpecFile)
	return nil
}

// waitFile waits until path (relative to the machine's root) exists.
func waitFile(ctx context.Context, m *Machine, path string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if _, err := os.Stat(filepath.Join(m.Root, path)); err == nil {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%s: no /%s within %s", m.Name, path, timeout)
		}
		time.Sleep(2 * time.Second)
	}
}

func logCloudInit(ctx context.Context, t *testing.T, m *Machine) {
	res, _ := m.Exec(ctx, nil, "sh", "-c", "cloud-init status --long; tail -n 60 /var/log/cloud-init-output.log")
	t.Logf("%s cloud-init:\n%s%s", m.Name, res.Stdout, res.Stderr)
}

// checkOpenedBy checks that the report says which recipient type opened
// the envelope (and the report holds no plaintext: checked by the
// secret scan of w3's report and by pkg/session's tests).
func checkOpenedBy(t *testing.T, m *Machine, typ string) {
	t.Helper()
	raw, err := m.ReadFile(reportPath)
	if err != nil {
		errorln(t, err)
		return
	}
	if !bytes.Contains(raw, []byte("sealed secrets opened by "+typ+" key ")) {
		errorf(t, "%s: the report does not name the %s recipient that opened the envelope:\n%s", m.Name, typ, raw)
	}
}

// snapshot lists the files of the machine's /etc, /var/lib/kubelet, /opt
// and /usr/local with mode, size and modification time, to show that a
// refused run changed nothing (the report in /var/lib/machineadm is the
// one thing it writes).
func snapshot(t *testing.T, m *Machine) string {
	t.Helper()
	var lines []string
	for _, top := range []string{"etc", "var/lib/kubelet", "opt", "usr/local"} {
		root := filepath.Join(m.Root, top)
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			rel, _ := filepath.Rel(m.Root, p)
			if rel == "etc/machine-id" || strings.HasPrefix(rel, "etc/resolv.conf") {
				return nil
			}
			fi, err := d.Info()
			if err != nil {
				return nil
			}
			lines = append(lines, fmt.Sprintf("%s %o %d %d", rel, fi.Mode(), fi.Size(), fi.ModTime().UnixNano()))
			return nil
		})
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}
