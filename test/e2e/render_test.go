//go:build e2e

package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// scenarioRender: workers bootstrapped from `machineadm render` output, the
// agent downloaded from the harness's HTTP server and verified by digest —
// and, when the agent comes from a release (MACHINEADM_E2E_RELEASE_DIR),
// by its signature too.
//   - w2 boots with the cloud-config as NoCloud user data; real cloud-init
//     runs the stub; w2 becomes Ready.
//   - w4 runs the shell stub: first one whose agent URL serves a tampered
//     binary (refused before it runs: nothing installed, no spec, no
//     report, no Node); then, from the real distribution registry
//     configured for token authentication (Debian's docker-registry, with
//     the test's token issuer), a blob whose stored content was tampered
//     with (refused the same way), then the genuine blob, fetched with an
//     anonymous pull token the stub got from the issuer; w4 becomes Ready.
func scenarioRender(ctx context.Context, t *testing.T, e *env, c *cluster) {
	agent, digest, sig := e.renderAgent(t)
	tampered := append(append([]byte{}, agent...), []byte("tampered")...)
	files := map[string][]byte{"/machineadm": agent, "/tampered/machineadm": tampered}
	if sig != nil {
		files["/machineadm.sig"] = sig.signature
	}
	srv, err := startAgentServer(files)
	if err != nil {
		fatalln(t, err)
	}
	defer srv.close()
	if sig != nil {
		sig.url = srv.url("/machineadm.sig")
	}

	// The token reaches the workers by a channel other than user data (the
	// spec only names its file; render refuses inline secrets).
	deliverToken := func(m *Machine) error {
		return m.WriteFile(machineTokenFile, []byte(c.secrets.token+"\n"), 0o600)
	}

	// cloud-init + cloud-config.
	cc := e.render(ctx, t, w2, "cloud-config", srv.url("/machineadm"), digest, sig)
	start := time.Now()
	mw2 := e.bootMachinesWith(ctx, t, bootOptions{withoutAgent: true, prepare: func(m *Machine) error {
		if err := deliverToken(m); err != nil {
			return err
		}
		return enableCloudInit(m, cc)
	}}, w2)[0]
	ready, err := waitNodesReady(ctx, c.cs, bootstrapTimeout, w2.Name)
	if err != nil {
		res, _ := mw2.Exec(ctx, nil, "sh", "-c", "cloud-init status --long; tail -n 40 /var/log/cloud-init-output.log")
		t.Logf("w2 cloud-init:\n%s%s", res.Stdout, res.Stderr)
		dumpDiagnostics(ctx, t, mw2)
		fatalln(t, err)
	}
	timing(t, "w2-boot-to-node-ready-cloud-init", ready[w2.Name].Sub(start))
	if srv.count("/machineadm") == 0 {
		errorf(t, "w2 became Ready without downloading the agent")
	}
	if sig != nil && srv.count("/machineadm.sig") == 0 {
		errorf(t, "w2 became Ready without fetching the agent's signature")
	}
	checkReport(t, mw2, workerJoinPhases)
	if res, err := mw2.Exec(ctx, nil, "cloud-init", "status"); err != nil || !strings.Contains(res.Stdout, "done") {
		errorf(t, "cloud-init status on w2: %q %v", res.Stdout, err)
	}

	// Shell stub: tampered agent first, then the genuine one.
	mw4 := e.bootMachinesWith(ctx, t, bootOptions{withoutAgent: true, prepare: deliverToken}, w4)[0]
	bad := e.render(ctx, t, w4, "shell", srv.url("/tampered/machineadm"), digest, sig)
	if err := mw4.WriteFile("/root/machineadm-stub-tampered.sh", bad, 0o700); err != nil {
		fatalln(t, err)
	}
	res, _ := mw4.Exec(ctx, nil, "sh", "/root/machineadm-stub-tampered.sh")
	t.Logf("tampered agent: exit %d: %s", res.ExitCode, strings.TrimSpace(res.Stderr))
	if res.ExitCode == 0 {
		errorf(t, "the stub ran a tampered agent")
	}
	if srv.count("/tampered/machineadm") == 0 {
		errorf(t, "the stub never fetched the tampered agent")
	}
	for _, p := range []string{"/usr/local/bin/machineadm", machineSpecFile, reportPath, "/var/lib/kubelet/config.yaml"} {
		if _, err := os.Stat(filepath.Join(mw4.Root, p)); err == nil {
			errorf(t, "after the refused agent %s exists", p)
		}
	}
	// The registry: the agent (and its signature) pushed as blobs; the
	// stub is rendered for the blob URL (a plain-http registry) and
	// answers the registry's Bearer challenge.
	start = time.Now()
	reg, err := startTokenRegistry(ctx, filepath.Join(e.runDir, "registry"))
	if err != nil {
		fatalln(t, err)
	}
	defer reg.close()
	agentURL, err := reg.push("machineadm/agent", agent)
	if err != nil {
		fatalln(t, err)
	}
	var regSig *releaseSignature
	if sig != nil {
		sigURL, err := reg.push("machineadm/agent", sig.signature)
		if err != nil {
			fatalln(t, err)
		}
		regSig = &releaseSignature{signature: sig.signature, publicKey: sig.publicKey, url: sigURL}
	}
	timing(t, "registry-start-and-push", time.Since(start))
	stored := reg.blobData(agent)
	if err := os.WriteFile(stored, tampered[len(tampered)-len(agent):], 0o644); err != nil {
		fatalln(t, err)
	}
	good := e.render(ctx, t, w4, "shell", agentURL, digest, regSig)
	if err := mw4.WriteFile("/root/machineadm-stub.sh", good, 0o700); err != nil {
		fatalln(t, err)
	}
	res, _ = mw4.Exec(ctx, nil, "sh", "/root/machineadm-stub.sh")
	t.Logf("tampered registry blob: exit %d: %s", res.ExitCode, strings.TrimSpace(res.Stderr))
	if res.ExitCode == 0 || !strings.Contains(res.Stderr, "agent: SHA-256 digest is") {
		errorf(t, "the stub did not refuse the tampered registry blob (exit %d)", res.ExitCode)
	}
	if len(reg.tokens()) == 0 {
		errorf(t, "the stub got the tampered blob without a token: the registry's token authentication is off")
	}
	for _, p := range []string{"/usr/local/bin/machineadm", machineSpecFile, reportPath, "/var/lib/kubelet/config.yaml"} {
		if _, err := os.Stat(filepath.Join(mw4.Root, p)); err == nil {
			errorf(t, "after the refused registry blob %s exists", p)
		}
	}
	if err := os.WriteFile(stored, agent, 0o644); err != nil {
		fatalln(t, err)
	}
	start = time.Now()
	bctx, cancel := context.WithTimeout(ctx, bootstrapTimeout)
	res, err = mw4.Exec(bctx, nil, "sh", "/root/machineadm-stub.sh")
	cancel()
	for _, tok := range reg.tokens() {
		if strings.Contains(res.Stdout+res.Stderr, tok) {
			errorf(t, "the stub's output shows the registry token")
		}
	}
	if !strings.Contains(res.Stderr, agentURL+": attempt 1 of") {
		errorf(t, "the stub did not fetch the agent from the registry:\n%s", tail(res.Stderr, 10))
	}
	_ = os.WriteFile(filepath.Join(mw4.Dir, "bootstrap.log"), []byte(res.Stdout+res.Stderr), 0o600)
	if err != nil {
		dumpDiagnostics(ctx, t, mw4)
		fatalf(t, "shell stub: %v\n%s", err, tail(res.Stdout+res.Stderr, 30))
	}
	ready, err = waitNodesReady(ctx, c.cs, readyTimeout, w4.Name)
	if err != nil {
		fatalln(t, err)
	}
	timing(t, "w4-registry-shell-stub-start-to-node-ready", ready[w4.Name].Sub(start))
	checkReport(t, mw4, workerJoinPhases)
	if _, err := c.cs.CoreV1().Nodes().Get(ctx, w4.Name, metav1.GetOptions{}); err != nil {
		errorln(t, err)
	}
}

// releaseSignature is the agent's detached signature in a release and
// the public key it verifies with.
type releaseSignature struct {
	signature []byte
	publicKey string // path of the PEM public key
	url       string // where the harness serves the signature
}

// renderAgent returns the agent the stubs download, its digest and, for an
// agent from a release, its signature. With MACHINEADM_E2E_RELEASE_DIR set
// (a `make release` dist directory; .ci/run sets it) the agent is the
// release's machineadm-linux-amd64, its digest the one SHA256SUMS lists
// (checked against the file) and the stubs check its signature with the
// release's public key; otherwise the agent is bin/machineadm, checked by
// digest only.
func (e *env) renderAgent(t *testing.T) (agent []byte, digest string, sig *releaseSignature) {
	t.Helper()
	dist := os.Getenv("MACHINEADM_E2E_RELEASE_DIR")
	path := e.machineadm
	if dist != "" {
		path = filepath.Join(dist, "machineadm-linux-amd64")
	}
	agent, err := os.ReadFile(path)
	if err != nil {
		fatalln(t, err)
	}
	sum := sha256.Sum256(agent)
	digest = hex.EncodeToString(sum[:])
	if dist == "" {
		return agent, digest, nil
	}
	sums, err := os.ReadFile(filepath.Join(dist, "SHA256SUMS"))
	if err != nil {
		fatalln(t, err)
	}
	listed := ""
	for _, line := range strings.Split(string(sums), "\n") {
		if h, name, ok := strings.Cut(line, "  "); ok && name == "machineadm-linux-amd64" {
			listed = h
		}
	}
	if listed != digest {
		fatalf(t, "%s: SHA256SUMS lists %q for machineadm-linux-amd64, the file's digest is %s", dist, listed, digest)
	}
	s, err := os.ReadFile(path + ".sig")
	if err != nil {
		fatalln(t, err)
	}
	t.Logf("agent from the release in %s (digest from SHA256SUMS, signature checked by the stubs)", dist)
	return agent, listed, &releaseSignature{signature: s, publicKey: filepath.Join(dist, "machineadm-release.pub")}
}

// render runs `machineadm render` on the host for node's worker spec, with
// extra flags after the common ones; a non-nil sig makes the stub check
// the agent's signature too. The spec file it rendered from is
// render-NODE/spec.yaml in the run directory.
func (e *env) render(ctx context.Context, t *testing.T, node hostsEntry, format, agentURL, digest string, sig *releaseSignature, extra ...string) []byte {
	t.Helper()
	y, err := specYAML(workerSpec(node, mustCAHash(t, e)))
	if err != nil {
		fatalln(t, err)
	}
	dir := filepath.Join(e.runDir, "render-"+node.Name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		fatalln(t, err)
	}
	specFile := filepath.Join(dir, "spec.yaml")
	if err := os.WriteFile(specFile, y, 0o600); err != nil {
		fatalln(t, err)
	}
	out := filepath.Join(dir, format)
	args := []string{"render", "-f", specFile, "--format", format,
		"--agent-url", agentURL, "--agent-sha256", digest, "--max-size", "aws", "-o", out}
	if sig != nil {
		args = append(args, "--agent-signature-url", sig.url, "--agent-public-key", sig.publicKey)
	}
	args = append(args, extra...)
	cmd := exec.CommandContext(ctx, e.machineadm, args...)
	if b, err := cmd.CombinedOutput(); err != nil {
		fatalf(t, "machineadm render --format %s: %v\n%s", format, err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		fatalln(t, err)
	}
	t.Logf("render --format %s for %s: %d bytes", format, node.Name, len(b))
	return b
}

// mustCAHash is the cluster's CA cert hash, computed from the CA set.
func mustCAHash(t *testing.T, e *env) string {
	t.Helper()
	h, err := caCertHash(filepath.Join(e.runDir, "pki", "ca.crt"))
	if err != nil {
		fatalln(t, err)
	}
	return h
}

// enableCloudInit gives the machine a NoCloud seed (user data = the
// rendered cloud-config) and unmasks cloud-init, which the base root
// filesystem keeps masked for the other machines.
func enableCloudInit(m *Machine, userData []byte) error {
	seed := "/var/lib/cloud/seed/nocloud"
	if err := m.WriteFile(seed+"/user-data", userData, 0o600); err != nil {
		return err
	}
	meta := "instance-id: e2e-" + m.Name + "\nlocal-hostname: " + m.Name + "\n"
	if err := m.WriteFile(seed+"/meta-data", []byte(meta), 0o600); err != nil {
		return err
	}
	for _, u := range []string{"cloud-init.service", "cloud-init-local.service", "cloud-config.service", "cloud-final.service"} {
		if err := os.Remove(filepath.Join(m.Root, "etc/systemd/system", u)); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	return nil
}

// checkReport checks a report written by a bootstrap the test did not run
// itself (cloud-init or a stub ran it).
func checkReport(t *testing.T, m *Machine, phases []string) {
	t.Helper()
	r, raw, err := readReport(m)
	if err != nil {
		errorln(t, err)
		return
	}
	if err := r.checkSucceeded(phases); err != nil {
		errorf(t, "%s: %v\n%s", m.Name, err, raw)
	}
}
