package sealspec

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
)

// Size is the size of a sealed file as user data would carry it.
type Size struct {
	// Raw is the multi-document file's length in bytes.
	Raw int
	// GzipBase64 is the length of its gzip (best compression) in base64,
	// as cloud-init's write_files `encoding: gz+b64` carries it.
	GzipBase64 int
}

// Smallest returns the smaller of the two forms.
func (s Size) Smallest() int { return min(s.Raw, s.GzipBase64) }

// MeasureSize measures a sealed file (SealSpec's Sealed.File).
func MeasureSize(file []byte) Size {
	var gz bytes.Buffer
	w, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	w.Write(file)
	w.Close()
	return Size{Raw: len(file), GzipBase64: base64.StdEncoding.EncodedLen(gz.Len())}
}
