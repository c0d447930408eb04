package phases

import "github.com/machineadm/machineadm/pkg/host/files"

// secretModeWarnings are files.WideSecretFiles of the run's spec on its
// host, as warning lines.
func secretModeWarnings(d *Data) []string {
	var out []string
	for _, w := range files.WideSecretFiles(d.Config, d.host().Path, d.sealedPKI != nil) {
		out = append(out, w.String())
	}
	return out
}
