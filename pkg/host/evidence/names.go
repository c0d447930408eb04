package evidence

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// idNames maps numeric ids to names from a root's /etc/passwd and
// /etc/group (the name stat(1) prints).
type idNames struct{ users, groups map[uint32]string }

func loadNames(root string) idNames {
	return idNames{users: readNames(root, "/etc/passwd"), groups: readNames(root, "/etc/group")}
}

func readNames(root, file string) map[uint32]string {
	out := map[uint32]string{}
	data, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Split(line, ":")
		if len(f) < 3 {
			continue
		}
		if id, err := strconv.ParseUint(f[2], 10, 32); err == nil {
			if _, dup := out[uint32(id)]; !dup {
				out[uint32(id)] = f[0]
			}
		}
	}
	return out
}

func (n idNames) user(id uint32) string  { return name(n.users, id) }
func (n idNames) group(id uint32) string { return name(n.groups, id) }

func name(m map[uint32]string, id uint32) string {
	if s, ok := m[id]; ok {
		return s
	}
	return strconv.FormatUint(uint64(id), 10)
}
