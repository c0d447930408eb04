// Command coredns is the CoreDNS server (github.com/coredns/coredns, the
// version kubeadm deploys: constants.CoreDNSVersion of the embedded
// k8s.io/kubernetes) the e2e cluster runs as its DNS addon, built with only
// the plugins kubeadm's Corefile uses (errors, health, ready, kubernetes,
// prometheus, forward, cache, loop, reload, loadbalance). This is CoreDNS's
// own way to choose plugins at compile time: import them and keep their
// names, in CoreDNS's order, in dnsserver.Directives. Leaving out the
// cloud DNS, tracing and etcd plugins keeps their SDKs out of the build,
// which the cold CI path compiles. A module of its own, so CoreDNS's
// dependencies never reach machineadm's or the other tools' go.mod. Built
// by hack/e2e/components.sh.
package main

import (
	"slices"

	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/metrics"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
)

// plugins are the directive names of the imported plugins (metrics
// registers "prometheus").
var plugins = []string{"errors", "health", "ready", "kubernetes", "prometheus", "forward", "cache", "loop", "reload", "loadbalance"}

func init() {
	// Keep CoreDNS's order, which decides the plugin chain.
	dnsserver.Directives = slices.DeleteFunc(slices.Clone(dnsserver.Directives), func(d string) bool {
		return !slices.Contains(plugins, d)
	})
}

func main() { coremain.Run() }
