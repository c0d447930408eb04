package seal

import (
	"bytes"
	"compress/flate"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"runtime"
)

// Item plaintext formats: the first byte of every item's plaintext.
const (
	// formatRaw: the secret's bytes follow.
	formatRaw byte = 0
	// formatDeflate: DEFLATE (RFC 1951) of the secret's bytes follows.
	formatDeflate byte = 1
	// formatPEM: a one-byte length, a PEM block type and the block's DER
	// follow; the secret is pem.EncodeToMemory of that block. Used only
	// when that re-encoding gives back the secret byte for byte.
	formatPEM byte = 2
	// formatPEMDeflate: formatPEM's body, DEFLATE-compressed.
	formatPEMDeflate byte = 3
)

// frame encodes a secret in its smallest format.
func frame(secret []byte) []byte {
	best := append([]byte{formatRaw}, secret...)
	try := func(f byte, body []byte) {
		if len(body)+1 < len(best) {
			best = append([]byte{f}, body...)
		}
	}
	try(formatDeflate, deflate(secret))
	if body, ok := pemBody(secret); ok {
		try(formatPEM, body)
		try(formatPEMDeflate, deflate(body))
	}
	return best
}

// pemBody returns type length, type and DER of a secret that is exactly
// one PEM block without headers, as Go's encoder writes it.
func pemBody(secret []byte) ([]byte, bool) {
	b, rest := pem.Decode(secret)
	if b == nil || len(rest) != 0 || len(b.Headers) != 0 || len(b.Type) > 255 {
		return nil, false
	}
	if !bytes.Equal(pem.EncodeToMemory(b), secret) {
		return nil, false
	}
	body := append([]byte{byte(len(b.Type))}, b.Type...)
	return append(body, b.Bytes...), true
}

// deflate compresses b at the best compression. A writer another
// compression left idle is reused (Reset gives the same output as a new
// one).
func deflate(b []byte) []byte {
	compressing <- struct{}{}
	defer func() { <-compressing }()
	var out bytes.Buffer
	var w *flate.Writer
	select {
	case w = <-idleDeflate:
		w.Reset(&out)
	default:
		w, _ = flate.NewWriter(&out, flate.BestCompression) // level is valid
	}
	w.Write(b)
	w.Close()
	w.Reset(io.Discard) // out is the caller's now
	select {
	case idleDeflate <- w:
	default:
	}
	return out.Bytes()
}

// compressing holds one slot per compression running: compression is
// CPU-bound, so more at once than the CPUs run only hold more writers in
// memory together (the controller seals for several reconciles at once).
var compressing = make(chan struct{}, runtime.GOMAXPROCS(0))

// idleDeflate keeps at most two writers between compressions. Each holds
// about a megabyte of state: making one per seal was 0.75 GB of
// allocations over 1,000 seals in `make bench-capi`, for the collector to
// reclaim, while two idle writers did not raise machineadm-controller's
// peak resident memory there. A fixed bound rather than one per CPU: on a
// large management node the idle writers stay two megabytes.
var idleDeflate = make(chan *flate.Writer, 2)

// inflate decompresses at most MaxPlaintextBytes.
func inflate(b []byte) ([]byte, error) {
	r := flate.NewReader(bytes.NewReader(b))
	defer r.Close()
	out, err := io.ReadAll(io.LimitReader(r, MaxPlaintextBytes+1))
	if err != nil {
		return nil, err
	}
	if len(out) > MaxPlaintextBytes {
		return nil, fmt.Errorf("plaintext larger than %d bytes", MaxPlaintextBytes)
	}
	return out, nil
}

// unframe decodes an item plaintext into the secret.
func unframe(p []byte) ([]byte, error) {
	if len(p) == 0 {
		return nil, errors.New("empty plaintext")
	}
	body := p[1:]
	switch p[0] {
	case formatRaw:
		return bytes.Clone(body), nil
	case formatDeflate:
		return inflate(body)
	case formatPEMDeflate:
		var err error
		if body, err = inflate(body); err != nil {
			return nil, err
		}
		fallthrough
	case formatPEM:
		if len(body) < 1 || len(body) < 1+int(body[0]) {
			return nil, errors.New("truncated PEM item")
		}
		n := int(body[0])
		return pem.EncodeToMemory(&pem.Block{Type: string(body[1 : 1+n]), Bytes: body[1+n:]}), nil
	}
	return nil, fmt.Errorf("unknown item format %d", p[0])
}
