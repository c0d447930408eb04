//go:build tools

package kubebench

import _ "github.com/aquasecurity/kube-bench"
