package e2e

// No build tag: the parser is tested on every host (`make test`); the
// reporter itself, which reads /proc, in peakrss_linux_test.go.

import "testing"

func TestParsePeak(t *testing.T) {
	rest, p, err := parsePeak("out\nmore\n" + peakMark + "maxrss-kib=100 anon-kib=40 file-kib=55 samples=7\n")
	if err != nil || rest != "out\nmore" || p != (PeakMem{MaxRSSKiB: 100, AnonKiB: 40, FileKiB: 55, Samples: 7}) {
		errorf(t, "got %q %+v %v", rest, p, err)
	}
	for _, bad := range []string{
		"no line at all",
		"\n" + peakMark + "maxrss-kib=100 anon-kib=40 file-kib=55",               // a field missing
		"\n" + peakMark + "maxrss-kib=100 anon-kib=x file-kib=55 samples=1",      // not a number
		"\n" + peakMark + "maxrss-kib=100 anon-kib=40 file-kib=55 samples=1 z=1", // unknown
		"\n" + peakMark + "maxrss-kib=-1 anon-kib=40 file-kib=55 samples=1",      // negative
	} {
		if _, _, err := parsePeak(bad); err == nil {
			errorf(t, "parsePeak(%q) accepted it", bad)
		}
	}
}
