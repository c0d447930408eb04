// Package atomicfile writes files so that readers see either the old or the
// new content, never a partial one, even after a crash: a temporary file in
// the same directory, owner and mode set, fsync, rename, then fsync of the
// directory. (The same idea as containerd's pkg/atomicfile.)
package atomicfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// WriteFile atomically replaces path with data and permission bits perm,
// keeping the process's owner. The parent directory must exist. On error
// the old file is unchanged and no temporary file is left behind.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	return write(path, data, perm, nil, true)
}

// WriteFileUnsynced is WriteFile without the two fsyncs: readers still see
// the old or the new content, never a partial one, but after a power loss
// the file may hold an earlier version. For frequent updates of a file
// whose durable version is written with WriteFile (the outcome report's
// progress updates); an fsync costs milliseconds, the rename alone well
// under one.
func WriteFileUnsynced(path string, data []byte, perm os.FileMode) error {
	return write(path, data, perm, nil, false)
}

// WriteFileOwned is WriteFile with the new file owned by uid:gid (numeric
// ids). The owner is set before the mode, since chown clears setuid bits.
func WriteFileOwned(path string, data []byte, perm os.FileMode, uid, gid int) error {
	return write(path, data, perm, &[2]int{uid, gid}, true)
}

// Create writes a new file at path with data and permission bits perm,
// atomically and durably as WriteFile, but never replaces anything: the
// complete temporary file is hard-linked to path, which fails when path
// exists (a file, a directory or a symbolic link, dangling or not) and
// then returns an error that errors.Is(err, fs.ErrExist). Of two Creates
// of one path at the same time, exactly one succeeds; a reader never sees
// a partial file. For keys that must not change once made (an encryption
// key data in etcd may already be encrypted with). The file system must
// support hard links (every Linux one does, and NTFS).
func Create(path string, data []byte, perm os.FileMode) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".new-*")
	if err != nil {
		return fmt.Errorf("creating %s: %w", path, err)
	}
	defer func() {
		tmp.Close()
		os.Remove(tmp.Name())
		if err != nil {
			err = fmt.Errorf("creating %s: %w", path, err)
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		return err
	}
	if err = tmp.Chmod(perm); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if err = os.Link(tmp.Name(), path); err != nil {
		return noHardLinks(dir, err)
	}
	SyncDir(dir)
	return nil
}

// ErrNoHardLinks is wrapped by Create's error when the directory's file
// system does not support hard links (FAT, some FUSE file systems), which
// Create needs to never replace a file.
var ErrNoHardLinks = errors.New("the file system does not support hard links, which creating a file that never replaces another needs (FAT, some FUSE file systems): create it on another file system and copy it")

// noHardLinks returns err, from linking a file into dir, wrapped with
// ErrNoHardLinks when it says the file system has none (an unsupported
// operation; on Linux also EPERM, FAT's answer, the temporary file in the
// same directory having been created), or err itself.
func noHardLinks(dir string, err error) error {
	if errors.Is(err, errors.ErrUnsupported) || linkRefusedByFileSystem(err) {
		return fmt.Errorf("%s: %w: %w", dir, ErrNoHardLinks, err)
	}
	return err
}

// WriteFromOwned is WriteFileOwned with the content read from r to its
// end, copied in pieces (never held whole in memory), for content of any
// size: a binary staged on disk. On a read error the old file is
// unchanged. uid or gid below 0 keeps the process's owner.
func WriteFromOwned(path string, r io.Reader, perm os.FileMode, uid, gid int) error {
	var owner *[2]int
	if uid >= 0 && gid >= 0 {
		owner = &[2]int{uid, gid}
	}
	return writeFrom(path, r, perm, owner, true)
}

func write(path string, data []byte, perm os.FileMode, owner *[2]int, sync bool) error {
	return writeFrom(path, bytes.NewReader(data), perm, owner, sync)
}

func writeFrom(path string, r io.Reader, perm os.FileMode, owner *[2]int, sync bool) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
			err = fmt.Errorf("writing %s: %w", path, err)
		}
	}()
	// io.Copy lets the file take the reader (ReadFrom), which copies
	// between files in the kernel where it can.
	if _, err = io.Copy(tmp, r); err != nil {
		return err
	}
	if owner != nil {
		if err = tmp.Chown(owner[0], owner[1]); err != nil {
			return err
		}
	}
	if err = tmp.Chmod(perm); err != nil {
		return err
	}
	if sync {
		if err = tmp.Sync(); err != nil {
			return err
		}
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	if !sync {
		return nil
	}
	// Make the rename durable; some file systems (and Windows) cannot sync
	// a directory, and the rename is done by then.
	SyncDir(dir)
	return nil
}
