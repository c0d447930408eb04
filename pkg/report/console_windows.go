package report

import "os"

// DefaultConsoleDevices is empty on Windows: its serial console (EMS/SAC)
// is not a file machineadm can write; the summary goes to standard output.
var DefaultConsoleDevices = []string{}

// openConsole opens a device for writing.
func openConsole(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY, 0)
}
