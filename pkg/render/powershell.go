package render

// renderPowerShell builds the first-boot PowerShell stub. Its first line,
// "#ps1_sysnative", makes cloudbase-init run it as 64-bit PowerShell; for
// PowerShell itself it is a comment. The stub downloads the agent to
// WindowsAgentPath with bounded retries (Invoke-WebRequest), compares its
// Get-FileHash SHA-256 with the pinned digest before anything runs, writes
// the spec to WindowsSpecPath in a directory whose ACL admits only SYSTEM and
// Administrators, then runs `machineadm bootstrap -f SPEC` and exits with its
// exit code. Its parameters carry the rendered values as defaults, so the
// same script also serves images that pass them on the command line
// (contrib/windows/firstboot.ps1).
func renderPowerShell(r *resolved, spec []byte) ([]byte, error) {
	s := newStub(r, spec, WindowsAgentPath, WindowsSpecPath, true)
	return execute("stub.ps1.tmpl", s)
}
