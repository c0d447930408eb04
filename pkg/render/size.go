package render

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Limit is an upper bound on the size of bootstrap data.
type Limit struct {
	// Name is the preset's name ("aws"), or "" for a plain number.
	Name string
	// Bytes is the largest allowed size in bytes; 0 means no limit.
	Bytes int
	// Base64 measures the base64 encoding of the output (RFC 4648, padded)
	// rather than the raw bytes, for platforms that limit the encoded form.
	Base64 bool
}

// Presets are the user-data limits of common platforms (R16).
//
//   - aws: EC2 user data, 16 KB before base64 encoding.
//   - azure: customData, 64 KB of (decoded) data.
//   - openstack: Nova user_data, 65535 bytes of the base64 string the API takes.
//   - vsphere: the guestinfo.userdata VM property, about 64 KiB, which
//     Cluster API's vSphere provider fills with base64.
var Presets = []Limit{
	{Name: "aws", Bytes: 16384},
	{Name: "azure", Bytes: 65536},
	{Name: "openstack", Bytes: 65535, Base64: true},
	{Name: "vsphere", Bytes: 65536, Base64: true},
}

// ParseLimit reads a --max-size value: a preset name (see Presets, any
// letter case), a number of bytes greater than 0, or "" for no limit. "0"
// and negative numbers are an *OptionError: a zero limit is ambiguous
// (no limit, or nothing allowed), so no limit is written by leaving the
// flag out.
func ParseLimit(s string) (Limit, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Limit{}, nil
	}
	if i := slices.IndexFunc(Presets, func(l Limit) bool { return l.Name == strings.ToLower(s) }); i >= 0 {
		return Presets[i], nil
	}
	names := make([]string, len(Presets))
	for i, p := range Presets {
		names[i] = p.Name
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return Limit{}, optErr("--max-size", "%q is neither a number of bytes nor a preset (%s)", s, strings.Join(names, ", "))
	}
	if n <= 0 {
		return Limit{}, optErr("--max-size", "%d: must be > 0 or a preset (%s); leave the flag out for no limit", n, strings.Join(names, ", "))
	}
	return Limit{Bytes: n}, nil
}

// String describes the limit, for example "aws (16384 bytes)".
func (l Limit) String() string {
	if l.Bytes == 0 {
		return "none"
	}
	s := fmt.Sprintf("%d bytes", l.Bytes)
	if l.Base64 {
		s += " of base64"
	}
	if l.Name != "" {
		s = l.Name + " (" + s + ")"
	}
	return s
}

// Measure returns the size of data as l counts it.
func (l Limit) Measure(data []byte) int {
	if l.Base64 {
		return base64.StdEncoding.EncodedLen(len(data))
	}
	return len(data)
}

// SizeError is bootstrap data larger than the limit.
type SizeError struct {
	// Format is the format that was rendered.
	Format Format
	// Size is the measured size in bytes, as Limit counts it.
	Size int
	// Limit is the bound that was exceeded.
	Limit Limit
}

func (e *SizeError) Error() string {
	what := "bytes"
	if e.Limit.Base64 {
		what = "bytes once base64-encoded"
	}
	return fmt.Sprintf("%s bootstrap data is %d %s, over the limit %s by %d; "+
		"serve the spec from a location outside instance metadata with --payload-url URL (and --payload-sha256), "+
		"which leaves only the small stub in user data",
		e.Format, e.Size, what, e.Limit, e.Size-e.Limit.Bytes)
}

// checkSize returns a *SizeError when data is over l.
func checkSize(f Format, data []byte, l Limit) error {
	if l.Bytes == 0 {
		return nil
	}
	if n := l.Measure(data); n > l.Bytes {
		return &SizeError{Format: f, Size: n, Limit: l}
	}
	return nil
}
