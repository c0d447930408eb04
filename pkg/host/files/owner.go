package files

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// IDs maps user and group names of one root to numeric ids, read from the
// root's /etc/passwd and /etc/group (the machine's own databases, not the
// ones of whatever runs machineadm at image-build time).
type IDs struct {
	users  map[string]int
	groups map[string]int
}

// LoadIDs reads root's /etc/passwd and /etc/group. Missing files give
// empty databases (numeric ids still work).
func LoadIDs(root string) (*IDs, error) {
	ids := &IDs{}
	var err error
	if ids.users, err = readIDFile(root, "/etc/passwd", 2); err != nil {
		return nil, err
	}
	if ids.groups, err = readIDFile(root, "/etc/group", 2); err != nil {
		return nil, err
	}
	return ids, nil
}

// ParseIDDatabase parses the colon-separated lines of passwd(5) or
// group(5) into name → id, the id being field idField (2 in both).
// Comments, blank lines and NIS "+"/"-" entries are skipped.
func ParseIDDatabase(data []byte, idField int) map[string]int {
	out := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == '+' || line[0] == '-' {
			continue
		}
		f := strings.Split(line, ":")
		if len(f) <= idField {
			continue
		}
		id, err := strconv.Atoi(f[idField])
		if err != nil || id < 0 {
			continue
		}
		if _, dup := out[f[0]]; !dup {
			out[f[0]] = id
		}
	}
	return out
}

func readIDFile(root, p string, idField int) (map[string]int, error) {
	hp, err := Resolve(root, p)
	if err != nil {
		return nil, err
	}
	data, err := ReadRegular(hp, p)
	if os.IsNotExist(err) {
		return map[string]int{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", p, err)
	}
	return ParseIDDatabase(data, idField), nil
}

// ReadRegular reads the regular file at hp, a path Resolve returned (p
// names it in errors), whole; anything else (a FIFO in an image under
// --root DIR, whose open blocks until a writer comes, or a device, whose
// open acts on it) is refused without being opened (OpenRegular; a
// symlink swapped in since Resolve is not followed). A missing file is
// an error for which os.IsNotExist holds.
func ReadRegular(hp, p string) ([]byte, error) {
	f, _, err := OpenRegular(hp, p, false)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// UID returns the uid of a user name or numeric uid string.
func (ids *IDs) UID(s string) (int, error) { return lookup(s, ids.users, "user", "/etc/passwd") }

// GID returns the gid of a group name or numeric gid string.
func (ids *IDs) GID(s string) (int, error) { return lookup(s, ids.groups, "group", "/etc/group") }

func lookup(s string, db map[string]int, kind, file string) (int, error) {
	if n, err := strconv.Atoi(s); err == nil {
		if n < 0 {
			return 0, fmt.Errorf("%s id %d is negative", kind, n)
		}
		return n, nil
	}
	if id, ok := db[s]; ok {
		return id, nil
	}
	return 0, fmt.Errorf("unknown %s %q (not in the root's %s)", kind, s, file)
}
