package sealspec

import (
	"bytes"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"

	"github.com/machineadm/machineadm/pkg/seal"
)

// The CA set travels as one item, "spec.controlPlane.pki.dir", whose
// secret is a directory bundle: for each file, in name order, a 1-byte
// name length, the name (slash-separated, relative), a 1-byte form (0: the
// content as is; 1: a single PEM block stored as 1-byte type length, type
// and DER, re-encoded exactly by pem.EncodeToMemory), a 4-byte big-endian
// length and the data. The envelope compresses the whole bundle, so the
// certificates' shared structure is stored once; one item instead of
// eight saves their paths, nonces and tags.

const (
	bundleRaw byte = 0
	bundlePEM byte = 1
	// maxBundleFiles bounds the files of a bundle.
	maxBundleFiles = 64
)

// encodeBundle encodes files (relative name → content).
func encodeBundle(files map[string][]byte) ([]byte, error) {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	var b bytes.Buffer
	for _, n := range names {
		if len(n) == 0 || len(n) > 255 {
			return nil, fmt.Errorf("bundle: bad file name %q", n)
		}
		b.WriteByte(byte(len(n)))
		b.WriteString(n)
		form, data := bundleRaw, files[n]
		if blk, rest := pem.Decode(data); blk != nil && len(rest) == 0 && len(blk.Headers) == 0 && len(blk.Type) < 256 &&
			bytes.Equal(pem.EncodeToMemory(blk), data) {
			form = bundlePEM
			data = append(append([]byte{byte(len(blk.Type))}, blk.Type...), blk.Bytes...)
		}
		b.WriteByte(form)
		b.Write(binary.BigEndian.AppendUint32(nil, uint32(len(data))))
		b.Write(data)
	}
	return b.Bytes(), nil
}

// decodeBundle decodes a bundle, bounded by its own length.
func decodeBundle(b []byte) (map[string][]byte, error) {
	out := map[string][]byte{}
	bad := errors.New("malformed directory bundle")
	for len(b) > 0 {
		if len(out) >= maxBundleFiles {
			return nil, fmt.Errorf("directory bundle of more than %d files", maxBundleFiles)
		}
		n := int(b[0])
		if len(b) < 1+n+1+4 {
			return nil, bad
		}
		name := string(b[1 : 1+n])
		form := b[1+n]
		size := binary.BigEndian.Uint32(b[2+n:])
		b = b[6+n:]
		if uint64(size) > uint64(len(b)) || !seal.ValidItemPath(PKIDirItem+"/"+name) {
			return nil, bad
		}
		data := b[:size]
		b = b[size:]
		switch form {
		case bundleRaw:
			out[name] = bytes.Clone(data)
		case bundlePEM:
			if len(data) < 1 || len(data) < 1+int(data[0]) {
				return nil, bad
			}
			t := int(data[0])
			out[name] = pem.EncodeToMemory(&pem.Block{Type: string(data[1 : 1+t]), Bytes: data[1+t:]})
		default:
			return nil, bad
		}
	}
	return out, nil
}
