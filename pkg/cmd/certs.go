package cmd

import (
	"errors"
	"io/fs"
	"os"
	"regexp"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/machineadm/machineadm/pkg/kubeadm/day2"
	"github.com/machineadm/machineadm/pkg/readlimit"
	"github.com/machineadm/machineadm/pkg/session"
)

func newCertsCommand(o *options) *cobra.Command {
	c := &cobra.Command{
		Use:   "certs",
		Short: "Certificates of a control-plane node (kubeadm's certs commands, compiled in)",
	}
	c.AddCommand(newCertsCheckExpirationCommand(o))
	return c
}

func newCertsCheckExpirationCommand(o *options) *cobra.Command {
	var certDir, config, kubeconfig, output string
	c := &cobra.Command{
		Use:   "check-expiration",
		Short: "Print kubeadm's table of the certificates' and CAs' expiry (reads only)",
		Long: `Runs the embedded kubeadm's own 'certs check-expiration': one row per
certificate kubeadm manages (in --cert-dir, and embedded in the kubeconfig
files of /etc/kubernetes) with its expiry, residual time, CA and whether it
is externally managed, then the CAs. The cluster configuration comes from
--config, else the kubeadm-config ConfigMap read with --kubeconfig, else
kubeadm's defaults. It changes nothing; 'machineadm upgrade' renews the
certificates that expire within the renewal window (docs/upgrade.md).

Exit codes: 0 printed, 1 kubeadm failed, 2 usage: also a --config or
--kubeconfig that is not a regular file (a FIFO, a device, a directory), a
--cert-dir, --config or --kubeconfig given that does not exist, a --config
with no InitConfiguration or ClusterConfiguration (a machine spec, say),
with one of another version than kubeadm.k8s.io/v1beta4 (the one the
embedded kubeadm reads) or with a document kubeadm's loader refuses (no
kind or apiVersion, a kind given twice), an --output other than text, json
or yaml.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, f := range []struct{ name, v string }{{"config", config}, {"kubeconfig", kubeconfig}} {
				if err := checkFileFlag(f.name, f.v); err != nil {
					return err
				}
			}
			if err := checkExpirationFlags(cmd, certDir, config, kubeconfig, output); err != nil {
				return err
			}
			var a []string
			for _, f := range []struct{ name, v string }{{"cert-dir", certDir}, {"config", config}, {"kubeconfig", kubeconfig}, {"output", output}} {
				if cmd.Flags().Changed(f.name) {
					a = append(a, "--"+f.name+"="+f.v)
				}
			}
			return day2.CheckExpiration(o.out, a)
		},
	}
	c.Flags().StringVar(&certDir, "cert-dir", "/etc/kubernetes/pki", "the certificates directory")
	c.Flags().StringVar(&config, "config", "", "a kubeadm configuration file (for example /var/lib/machineadm/kubeadm-init.yaml)")
	c.Flags().StringVar(&kubeconfig, "kubeconfig", "/etc/kubernetes/admin.conf", "the kubeconfig that reads the cluster's kubeadm-config ConfigMap")
	c.Flags().StringVarP(&output, "output", "o", "text", "output format: text, json, yaml (kubeadm's)")
	return c
}

// checkExpirationFlags refuses, as usage errors naming the flag (exit
// code 2), what kubeadm would take for a machine without certificates or
// fail on with exit code 1: a --cert-dir, --config or --kubeconfig given
// on the command line that does not exist (a typo printed every
// certificate as missing, or fell back to kubeadm's defaults), a --cert-dir
// that is not a directory, a --config without an InitConfiguration or
// ClusterConfiguration document (a machine spec, most often), one with a
// kubeadm document of another version than the embedded kubeadm reads
// (day2.ConfigAPIVersion: kubeadm.k8s.io/v1beta3 files of older
// clusters), one kubeadm's loader cannot split into documents
// (day2.ConfigDocuments: a document without kind or apiVersion, a kind
// given twice) and an --output other than text, json or yaml.
func checkExpirationFlags(cmd *cobra.Command, certDir, config, kubeconfig, output string) error {
	switch output {
	case "text", "json", "yaml":
	default:
		return session.Usagef("--output %q: one of text, json, yaml", output)
	}
	for _, f := range []struct{ name, v string }{{"cert-dir", certDir}, {"config", config}, {"kubeconfig", kubeconfig}} {
		if !cmd.Flags().Changed(f.name) {
			continue
		}
		fi, err := os.Stat(f.v)
		if errors.Is(err, fs.ErrNotExist) {
			return session.Usagef("--%s %s: does not exist", f.name, f.v)
		}
		if err != nil {
			return session.Usagef("--%s %s: %v", f.name, f.v, err)
		}
		if f.name == "cert-dir" && !fi.IsDir() {
			return session.Usagef("--cert-dir %s: not a directory", f.v)
		}
	}
	if config == "" {
		return nil
	}
	data, err := readlimit.File(config, 4<<20)
	if err != nil {
		return session.Usagef("--config %s: %v", config, err)
	}
	gvks, err := day2.ConfigDocuments(data)
	if err != nil {
		return session.Usagef("--config %s: not a kubeadm configuration: %v", config, err)
	}
	kinds, machineSpec, found := []string{}, false, false
	for _, gvk := range gvks {
		switch gv := gvk.GroupVersion().String(); {
		case gvk.Group == "kubeadm.k8s.io" && gv != day2.ConfigAPIVersion():
			return configVersionError(config, gvk.Kind, gv)
		case gvk.Group == "kubeadm.k8s.io" && (gvk.Kind == "InitConfiguration" || gvk.Kind == "ClusterConfiguration"):
			found = true
		case gvk.Group == "machineadm.io":
			machineSpec = true
		}
		kinds = append(kinds, gvk.Kind)
	}
	if found {
		return nil
	}
	if machineSpec {
		return session.Usagef("--config %s: is a machineadm spec; --config takes the kubeadm configuration machineadm wrote from it (/var/lib/machineadm/kubeadm-init.yaml), or leave it out: %s", config, withoutConfig)
	}
	return session.Usagef("--config %s: holds no kubeadm.k8s.io InitConfiguration or ClusterConfiguration (kinds: %s); a node that joined has none (its /var/lib/machineadm/kubeadm-join.yaml is a JoinConfiguration): leave --config out: %s", config, strings.Join(kinds, ", "), withoutConfig)
}

// withoutConfig says what check-expiration reads without --config: the
// kubeadm-config ConfigMap only where --kubeconfig loads (admin.conf,
// which only a control plane has); elsewhere kubeadm falls back to its
// defaults without a word.
const withoutConfig = "on a control plane kubeadm then reads the cluster's kubeadm-config ConfigMap with --kubeconfig (default /etc/kubernetes/admin.conf); a worker has no admin.conf and none of the control plane's certificates: kubeadm's defaults are used, and of its rows only the cluster CA (ca) is there"

// oldConfigVersion matches the kubeadm configuration versions of older
// kubeadm releases, which `kubeadm config migrate` of such a release
// converts.
var oldConfigVersion = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^kubeadm\.k8s\.io/v1(alpha[1-3]|beta[1-3])$`)
})

// configVersionError is the usage error of a --config whose document of
// kind is of version gv, not the one the embedded kubeadm reads: an older one
// converts with an older kubeadm; kubeadm.k8s.io/v1 is experimental, read
// only with an --allow-experimental-api that check-expiration lacks; any
// other is a typo.
func configVersionError(config, kind, gv string) error {
	want := day2.ConfigAPIVersion()
	switch {
	case oldConfigVersion().MatchString(gv):
		return session.Usagef("--config %s: its %s is %s; the embedded kubeadm reads %s (an older file converts with `kubeadm config migrate` of the kubeadm release that still reads it)", config, kind, gv, want)
	case gv == "kubeadm.k8s.io/v1":
		return session.Usagef("--config %s: its %s is %s; kubeadm.k8s.io/v1 is experimental, which check-expiration does not read: write it as %s", config, kind, gv, want)
	}
	return session.Usagef("--config %s: its %s is %s; %s is no version kubeadm has: write it as %s", config, kind, gv, gv, want)
}
