package render

import (
	"net/url"
	"regexp"
	"strings"
	"sync"

	"github.com/distribution/reference"
)

// OCIScheme is the scheme of an agent (or signature) source in a container
// registry: oci://REGISTRY/REPOSITORY@sha256:HEX names one blob by its
// digest, fetched over HTTPS from REGISTRY's distribution API
// (https://REGISTRY/v2/REPOSITORY/blobs/sha256:HEX). The blob is the file
// itself: the agent binary as a layer of an artifact (`oras push`), or its
// signature.
const OCIScheme = "oci"

// dockerHubRegistry (and its old name dockerHubLegacy) and dockerHubAPI:
// references to docker.io are served by registry-1.docker.io (the host
// docker and containerd use for it); a one-component repository there is
// an official image, under library/.
const (
	dockerHubRegistry = "docker.io"
	dockerHubLegacy   = "index.docker.io"
	dockerHubAPI      = "registry-1.docker.io"
)

// blobPath matches the path of a registry blob URL (distribution API
// "GET /v2/<name>/blobs/<digest>"), with the digest's hex in group 2.
var blobPath = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^/v2/(.+)/blobs/sha256:([0-9a-fA-F]{64})$`) })

// registrySource is an agent or signature source served by a container
// registry: the stubs answer its anonymous Bearer challenge.
type registrySource struct {
	// URL is the http(s) URL of the blob.
	URL string
	// SHA256 is the blob's digest in lower-case hex.
	SHA256 string
}

// parseRegistrySource recognises a registry source: an oci:// reference
// (always), or an http(s) URL whose path is a registry blob path (a
// plain-http registry, or a registry named by its blob URL). It returns nil
// for any other URL, and an *OptionError naming flag for an oci:// reference
// that is malformed or not pinned by a sha256 digest.
func parseRegistrySource(flag, raw string) (*registrySource, error) {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return nil, nil
	}
	if !strings.EqualFold(scheme, OCIScheme) {
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.RawQuery != "" || u.Fragment != "" {
			return nil, nil
		}
		m := blobPath().FindStringSubmatch(u.EscapedPath())
		if m == nil {
			return nil, nil
		}
		if _, err := reference.ParseNormalizedNamed(m[1]); err != nil {
			return nil, optErr(flag, "%q looks like a registry blob URL but %q is not a repository name: %v", shownURL(raw), m[1], err)
		}
		return &registrySource{URL: raw, SHA256: strings.ToLower(m[2])}, nil
	}
	const form = "oci://REGISTRY/REPOSITORY@sha256:DIGEST"
	if strings.ContainsFunc(raw, func(r rune) bool { return r <= ' ' || r >= 0x7f }) {
		return nil, optErr(flag, "%q contains white space, control characters or characters outside ASCII", raw)
	}
	if strings.ContainsAny(rest, "?#") {
		return nil, optErr(flag, "%q: an oci:// reference has no query or fragment; the form is %s", raw, form)
	}
	host, _, ok := strings.Cut(rest, "/")
	if !ok || host == "" {
		return nil, optErr(flag, "%q names no registry and repository; the form is %s", raw, form)
	}
	if strings.Contains(host, "@") {
		return nil, optErr(flag, "an oci:// reference carries no user information (the stubs pull anonymously); the form is %s", form)
	}
	ref, err := reference.Parse(rest)
	if err != nil {
		return nil, optErr(flag, "%q is not a registry reference (%v); the form is %s", raw, err, form)
	}
	named, isNamed := ref.(reference.Named)
	digested, isDigested := ref.(reference.Digested)
	if !isNamed || !isDigested {
		return nil, optErr(flag, "%q is not pinned by a digest; the form is %s (a tag can move, a digest cannot)", raw, form)
	}
	if _, tagged := ref.(reference.Tagged); tagged {
		return nil, optErr(flag, "%q has a tag and a digest; give only the digest: %s", raw, form)
	}
	d := digested.Digest()
	if d.Algorithm() != "sha256" {
		return nil, optErr(flag, "%q: digest algorithm %q; the stubs check sha256 digests", raw, d.Algorithm())
	}
	registry := reference.Domain(named)
	if registry != host {
		// reference.Parse took the first segment for a path component:
		// "oci://repo@sha256:..." without a registry host.
		return nil, optErr(flag, "%q names no registry host before the repository; the form is %s", raw, form)
	}
	api, repo := registry, reference.Path(named)
	if api == dockerHubRegistry || api == dockerHubLegacy {
		// Docker Hub's official images live under library/, as docker
		// and containerd read "docker.io/alpine".
		api = dockerHubAPI
		if !strings.Contains(repo, "/") {
			repo = "library/" + repo
		}
	}
	return &registrySource{
		URL:    "https://" + api + "/v2/" + repo + "/blobs/" + d.String(),
		SHA256: d.Encoded(),
	}, nil
}

// pinRegistryDigest reconciles a registry source's digest with given, the
// value of the digest flag digestFlag (already lower-cased; "" when not
// given): the source's digest when none is given, an *OptionError naming
// digestFlag when they differ.
func pinRegistryDigest(src *registrySource, urlFlag, digestFlag, given string) (string, error) {
	if given != "" && given != src.SHA256 {
		return "", optErr(digestFlag, "%s differs from the digest %s in %s: a registry blob is named by its content's digest", given, src.SHA256, urlFlag)
	}
	return src.SHA256, nil
}
