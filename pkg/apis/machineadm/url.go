package machineadm

import (
	"net/url"
	"strings"
)

// URLHasCredentials reports whether raw carries user information — a user
// name, with or without a password — in its authority, as in
// "http://user:password@proxy.example.com:3128" (RFC 3986 section 3.2.1).
// A URL without a scheme ("user:password@proxy:3128") counts too: proxy
// variables accept that form (Go's net/http/httpproxy and curl read it as
// http://). Query strings are not looked at.
func URLHasCredentials(raw string) bool {
	_, ok := URLUserinfo(raw)
	return ok
}

// URLUserinfo returns the user information of raw as written
// ("user:password", percent-encoding kept), without the "@", and whether
// raw has any. It parses raw as a URL, or with "http://" in front when it
// has no scheme. When Go's parser refuses it (an unescaped "/", "?" or "#"
// in a password), everything before the last "@" counts: better a false
// alarm than a password taken for a host name.
func URLUserinfo(raw string) (string, bool) {
	raw = strings.TrimSpace(raw)
	if !strings.Contains(raw, "@") {
		return "", false
	}
	s := raw
	if !strings.Contains(raw, "://") {
		s = "http://" + raw
	}
	if u, err := url.Parse(s); err == nil && u.Host != "" {
		if u.User == nil {
			return "", false
		}
		return userinfoOf(s, true)
	}
	return userinfoOf(raw, false)
}

// userinfoOf cuts the user information out of s: after "scheme://" when
// present, before the last "@" of the authority — which ends at the first
// "/", "?" or "#" when parsed is set (as in net/url), else at the end.
func userinfoOf(s string, parsed bool) (string, bool) {
	if i := strings.Index(s, "://"); i >= 0 {
		s = s[i+3:]
	}
	if i := strings.IndexAny(s, "/?#"); parsed && i >= 0 {
		s = s[:i]
	}
	at := strings.LastIndex(s, "@")
	if at <= 0 {
		return "", false
	}
	return s[:at], true
}
