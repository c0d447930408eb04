package main

import (
	"slices"
	"testing"

	"github.com/coredns/coredns/core/dnsserver"
)

// TestDirectives: the directives are exactly the plugins kubeadm's
// Corefile names, in CoreDNS's order. (An unregistered one would make
// CoreDNS refuse the Corefile, which the e2e's DNS check would show.)
func TestDirectives(t *testing.T) {
	if len(dnsserver.Directives) != len(plugins) {
		t.Fatalf("directives %v, want the %d of %v", dnsserver.Directives, len(plugins), plugins)
	}
	for _, p := range plugins {
		if !slices.Contains(dnsserver.Directives, p) {
			t.Errorf("directive %s missing", p)
		}
	}
	if i, j := slices.Index(dnsserver.Directives, "kubernetes"), slices.Index(dnsserver.Directives, "forward"); i > j {
		t.Errorf("kubernetes after forward: %v", dnsserver.Directives)
	}
}
