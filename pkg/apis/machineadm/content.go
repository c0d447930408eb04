package machineadm

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// MaxContentBytes bounds the decoded size of a host.files[] content:
// 64 MiB. Inline content travels in the spec, usually in user data (16 KiB
// to 64 KiB on most clouds), so a real file is far smaller; larger files
// come through source.url (at most 256 MiB, pkg/host/files.MaxFetchBytes).
// The bound stops a gzip bomb — a few kilobytes of gzip+base64 that
// inflate to gigabytes — before it fills memory.
const MaxContentBytes = 64 << 20

// Encodings of File.Content.
const (
	// EncodingPlain is content given as it is (the default, "").
	EncodingPlain = ""
	// EncodingBase64 is base64 in the standard alphabet (RFC 4648 section
	// 4); line breaks are ignored.
	EncodingBase64 = "base64"
	// EncodingGzipBase64 is base64 of a gzip stream (RFC 1952).
	EncodingGzipBase64 = "gzip+base64"
)

// ErrContentTooLarge is wrapped by DecodeContent's error when the decoded
// content exceeds MaxContentBytes.
var ErrContentTooLarge = errors.New("decoded content exceeds " + strconv.Itoa(MaxContentBytes>>20) + " MiB")

// DecodeContent decodes a file's content given its encoding: "" (plain),
// "base64" or "gzip+base64" (see the Encoding constants). Surrounding white
// space of encoded content is ignored. It is the one decoder of spec file
// content: validation, host preparation (pkg/host) and render use it, so a
// content that validates is exactly what is written.
//
// Errors: an unknown encoding, invalid base64 or gzip, and content that
// decodes to more than MaxContentBytes (wrapping ErrContentTooLarge; the
// gzip stream is never inflated past the bound). Callers add the field
// path (spec.host.files[N].content).
func DecodeContent(content, encoding string) ([]byte, error) {
	switch encoding {
	case EncodingPlain:
		if len(content) > MaxContentBytes {
			return nil, ErrContentTooLarge
		}
		return []byte(content), nil
	case EncodingBase64, EncodingGzipBase64:
		raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(content))
		if err != nil {
			return nil, err
		}
		if len(raw) > MaxContentBytes {
			return nil, ErrContentTooLarge
		}
		if encoding == EncodingBase64 {
			return raw, nil
		}
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, err
		}
		defer zr.Close()
		out, err := io.ReadAll(io.LimitReader(zr, MaxContentBytes+1))
		if err != nil {
			return nil, err
		}
		if len(out) > MaxContentBytes {
			return nil, ErrContentTooLarge
		}
		return out, nil
	}
	return nil, fmt.Errorf("unsupported encoding %q", encoding)
}
