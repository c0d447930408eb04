"""Apply a cloud-config's write_files and runcmd under a root directory with
cloud-init's own code, as cloud-init would on a machine, for the render
package's round-trip tests.

usage: cloudinit_apply.py CLOUD_CONFIG ROOT RUNCMD_SCRIPT

write_files entries are decoded and written by cloudinit.config.cc_write_files
with every path moved under ROOT; gzip-compressed user data is first
decompressed with cloudinit.util.decomp_gzip, as cloudinit.user_data does
with what the datasource returns; runcmd is turned into a shell script by
cloudinit.util.shellify (what cc_runcmd does), with write_files paths in its
commands moved under ROOT too.
"""
import grp
import os
import pwd
import sys

from cloudinit import util
from cloudinit.config import cc_write_files


def main(cfg_path, root, script_path):
    with open(cfg_path, "rb") as f:
        raw = f.read()
    raw = util.decomp_gzip(raw, decode=False)
    if not raw.startswith(b"#cloud-config\n"):
        sys.exit("not a #cloud-config document")
    cfg = util.load_yaml(raw.decode("utf-8"))
    if set(cfg) != {"write_files", "runcmd"}:
        sys.exit("unexpected modules: %s" % sorted(cfg))
    moved = {}
    files = []
    for entry in cfg["write_files"]:
        entry = dict(entry)
        moved[entry["path"]] = os.path.join(root, entry["path"].lstrip("/"))
        entry["path"] = moved[entry["path"]]
        files.append(entry)
    owner = "%s:%s" % (pwd.getpwuid(os.getuid()).pw_name, grp.getgrgid(os.getgid()).gr_name)
    cc_write_files.write_files("write_files", files, owner)
    runcmd = [[moved.get(arg, arg) for arg in cmd] for cmd in cfg["runcmd"]]
    util.write_file(script_path, util.shellify(runcmd), 0o700)


if __name__ == "__main__":
    main(*sys.argv[1:])
