package render

import (
	"fmt"
	"testing"
)

// TestGolden renders the worker example in every format, plus the
// variants (payload URL, agent in the image, signature, Ignition versions),
// and compares each with its golden file.
func TestGolden(t *testing.T) {
	data, cfg := loadExample(t, "worker")
	agent := AgentSource{URL: testAgentURL, SHA256: testAgentSHA256}
	cases := map[string]Options{}
	for _, f := range Formats {
		cases[fmt.Sprintf("worker.%s", f)] = Options{Format: f, Agent: agent}
		cases[fmt.Sprintf("worker-payload.%s", f)] = Options{Format: f, Agent: agent, Payload: &PayloadSource{URL: testPayloadURL, SHA256: sha256Hex(data)}}
	}
	cases["worker-in-image.shell"] = Options{Format: FormatShell, Agent: AgentSource{URL: "file:///usr/bin/machineadm"}}
	cases["worker-in-image.ignition"] = Options{Format: FormatIgnition, Agent: AgentSource{URL: "file:///usr/bin/machineadm", SHA256: testAgentSHA256}}
	cases["worker-in-image.powershell"] = Options{Format: FormatPowerShell, Agent: AgentSource{URL: "file:///C:/machineadm/machineadm.exe"}}
	signed := AgentSource{URL: testAgentURL, SHA256: testAgentSHA256, SignatureURL: testAgentURL + ".sig", PublicKey: []byte(testPublicKeyPEM)}
	cases["worker-signed.shell"] = Options{Format: FormatShell, Agent: signed}
	cases["worker-signed.ignition"] = Options{Format: FormatIgnition, Agent: signed}
	// The agent (and, for the Linux formats, its signature) from a
	// container registry.
	oci := AgentSource{URL: "oci://registry.example.com/machineadm/agent@sha256:" + testAgentSHA256}
	ociSigned := oci
	ociSigned.SignatureURL, ociSigned.PublicKey = "oci://registry.example.com/machineadm/agent@sha256:"+sha256Hex([]byte("signature")), []byte(testPublicKeyPEM)
	cases["worker-oci.shell"] = Options{Format: FormatShell, Agent: ociSigned}
	cases["worker-oci.ignition"] = Options{Format: FormatIgnition, Agent: ociSigned}
	cases["worker-oci.cloud-config"] = Options{Format: FormatCloudConfig, Agent: oci}
	cases["worker-oci.powershell"] = Options{Format: FormatPowerShell, Agent: oci}
	for _, v := range IgnitionVersions() {
		cases["worker.ignition-"+v] = Options{Format: FormatIgnition, IgnitionVersion: v, Agent: agent}
	}
	for name, o := range cases {
		t.Run(name, func(t *testing.T) {
			golden(t, name, mustRender(t, data, cfg, o))
		})
	}
}

// testPublicKeyPEM is a fixed ECDSA P-256 public key for golden files.
const testPublicKeyPEM = `-----BEGIN PUBLIC KEY-----
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE/EmQ5Ni/XCEkL8Ls91pbVt1eqgRY
90vFhrEmN1MT14W7l0QvxGDDIhXm3x9T4w89NdADgpJJjshKUbGjzqZUeA==
-----END PUBLIC KEY-----
`
