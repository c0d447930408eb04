package cpunits_test

import "golang.org/x/sys/unix"

func mountTmpfs(dir string) error { return unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1m") }

func unmount(dir string) { _ = unix.Unmount(dir, unix.MNT_DETACH) }

func bindMount(src, dir string) error { return unix.Mount(src, dir, "", unix.MS_BIND, "") }
