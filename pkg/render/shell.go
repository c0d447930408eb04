package render

// renderShell builds the POSIX sh stub that carries the spec inline (or
// fetches it from the payload URL). Its contract:
//
//   - needs sh, curl or wget, sha256sum (or openssl), base64, gzip; openssl
//     when a signature is checked;
//   - downloads with up to FetchAttempts tries, pausing FetchDelaySeconds
//     and doubling (at most 60 s), all downloads within FetchTimeoutSeconds;
//   - exits non-zero, without running anything, when a digest or the
//     signature does not match;
//   - installs the agent at LinuxAgentPath (0755, root) and writes the spec
//     at LinuxSpecPath (0600), then execs `machineadm bootstrap -f SPEC`,
//     whose exit code becomes the script's;
//   - downloads the agent and writes the spec into files named after its
//     own process ID, renamed into place once verified (removed on a
//     failure), so that two stubs started at once (the double start the
//     run lock answers with exit 3) never write into the file the other
//     checks, renames or runs.
//
// MACHINEADM_PREFIX moves the install paths under another root (tests).
func renderShell(r *resolved, spec []byte) ([]byte, error) {
	s := newStub(r, spec, LinuxAgentPath, LinuxSpecPath, true)
	s.Standalone = true
	return execute("stub.sh.tmpl", s)
}
