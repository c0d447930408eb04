package validation

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/machineadm/machineadm/pkg/apis/machineadm"
)

// Limits the operating system and Kubernetes set, which checks below
// enforce so that a spec the host or kubeadm would refuse is bad input
// before anything runs.
const (
	// MaxID is the largest user or group ID Linux accepts: uid_t and
	// gid_t are 32 bits and 4294967295 ((uid_t)-1) means "no change" to
	// chown(2).
	MaxID = 4294967294
	// MaxUserNameLen is the longest user or group name shadow-utils'
	// useradd and groupadd create (LOGIN_NAME_MAX is 256 on Linux, but
	// names longer than 32 characters are refused by the tools that make
	// them).
	MaxUserNameLen = 32
	// MinTimeout is the shortest non-zero timeout kubeadm can use: its
	// discovery and TLS bootstrap wait in steps of seconds, so "1ns" or
	// "500ms" can only time out.
	MinTimeout = time.Second
)

// validateRanges checks what the other validators check for shape
// against the ranges the OS and Kubernetes accept, and the cross-field
// limits kubeadm has: metadata.name (shown on consoles and in reports),
// numeric owners and groups, durations, and pod and service subnets that
// must not overlap.
func validateRanges(r *Result, c *machineadm.MachineBootstrapConfig) {
	s := &c.Spec
	if n := c.Metadata.Name; n != "" {
		// A name reaches the serial console and stdout: an escape sequence
		// or bidirectional control in it must never be accepted. The error
		// quotes it with %q, which escapes both.
		if msg := dns1123Subdomain(n); msg != "" {
			r.Errors = append(r.Errors, field.Invalid(field.NewPath("metadata", "name"), n, "must be a DNS-1123 subdomain, as a Cluster API Machine name is: "+msg))
		}
	}
	validateSubnetOverlap(r, s.Kubernetes.Networking.PodSubnet, s.Kubernetes.Networking.ServiceSubnet,
		field.NewPath("spec", "kubernetes", "networking"))
	for i, f := range s.Host.Files {
		fp := field.NewPath("spec", "host", "files").Index(i)
		validateID(r, f.Owner, "user", fp.Child("owner"))
		validateID(r, f.Group, "group", fp.Child("group"))
	}
	if s.Join != nil {
		validateMinDuration(r, s.Join.Timeout, field.NewPath("spec", "join", "timeout"))
	}
	if cp := s.ControlPlane; cp != nil {
		for i, t := range cp.BootstrapTokens {
			validateMinDuration(r, t.TTL, field.NewPath("spec", "controlPlane", "bootstrapTokens").Index(i).Child("ttl"))
		}
	}
}

// validateID checks a numeric user or group ID against MaxID and a name
// against MaxUserNameLen; the shape is checked by validateFile.
func validateID(r *Result, v, what string, p *field.Path) {
	if v == "" {
		return
	}
	if v[0] >= '0' && v[0] <= '9' {
		if n, err := strconv.ParseUint(v, 10, 64); err == nil && n > MaxID || err != nil && ownerRE().MatchString(v) {
			r.Errors = append(r.Errors, field.Invalid(p, v, fmt.Sprintf("a numeric %s ID must be between 0 and %d", what, MaxID)))
		}
		return
	}
	if len(v) > MaxUserNameLen {
		r.Errors = append(r.Errors, field.TooLong(p, v, MaxUserNameLen))
	}
}

// validateMinDuration refuses a positive duration below MinTimeout (a
// malformed or negative one is validateDuration's).
func validateMinDuration(r *Result, v string, p *field.Path) {
	if d, err := time.ParseDuration(v); err == nil && d > 0 && d < MinTimeout {
		r.Errors = append(r.Errors, field.Invalid(p, v, fmt.Sprintf("must be 0 or at least %v", MinTimeout)))
	}
}

// validateSubnetOverlap refuses pod and service subnets that share
// addresses, in either IP family: a Service IP inside the pod network is
// routed to a pod, or the other way round. Malformed values are left to
// validateCIDRs.
func validateSubnetOverlap(r *Result, pods, services string, p *field.Path) {
	for _, pc := range cidrs(pods) {
		for _, sc := range cidrs(services) {
			if pc.Contains(sc.IP) || sc.Contains(pc.IP) {
				r.Errors = append(r.Errors, field.Invalid(p.Child("serviceSubnet"), services,
					fmt.Sprintf("overlaps spec.kubernetes.networking.podSubnet (%s and %s share addresses); pods and Services need separate ranges", pc, sc)))
			}
		}
	}
}

// cidrs parses a comma-separated CIDR list, skipping malformed entries.
func cidrs(v string) []*net.IPNet {
	var out []*net.IPNet
	for _, c := range strings.Split(v, ",") {
		if _, n, err := net.ParseCIDR(strings.TrimSpace(c)); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// endpointSchemeProblem says what is wrong with an endpoint written as a
// URL ("https://docker.io", "https://cp:6443/"): endpoints and registry
// hosts are host[:port] only.
func endpointSchemeProblem(ep string) string {
	if i := strings.Index(ep, "://"); i > 0 {
		return fmt.Sprintf("must be host[:port] without a scheme or path: drop %q", ep[:i+3])
	}
	if strings.ContainsAny(ep, "/?#") {
		return "must be host[:port] without a path"
	}
	return ""
}

// portProblem checks a URL's port (u.Port()): empty, or 1 to 65535.
func portProblem(port string) string {
	if port == "" {
		return ""
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "port must be between 1 and 65535"
	}
	return ""
}

// redactedURL is v for an error: "<redacted>" when it carries
// credentials, and without its query and fragment (a presigned URL's
// signature or token), which show as "?<redacted>", as the fetcher's
// logs leave them out.
func redactedURL(v string) any {
	if machineadm.URLHasCredentials(v) {
		return "<redacted>"
	}
	if i := strings.IndexAny(v, "?#"); i >= 0 {
		return v[:i] + "?<redacted>"
	}
	return v
}
