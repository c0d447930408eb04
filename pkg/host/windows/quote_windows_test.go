package windows

import (
	"slices"
	"testing"

	"golang.org/x/sys/windows"
)

// TestCommandLineRoundTrip reads the service command line back with the
// real CommandLineToArgvW (shell32), as the kubelet service's process
// sees it.
func TestCommandLineRoundTrip(t *testing.T) {
	d := KubeletService(`C:\Program Files\machine adm\machineadm.exe`, `C:\k dir\kubelet.exe`)
	d.Args = append(d.Args, `a"b`, `C:\trailing space\`, "")
	got, err := windows.DecomposeCommandLine(d.CommandLine())
	if err != nil {
		t.Fatal(err)
	}
	want := append([]string{d.Executable}, d.Args...)
	if !slices.Equal(got, want) {
		t.Errorf("CommandLineToArgvW(%s) = %q, want %q", d.CommandLine(), got, want)
	}
}
