// Package doctest runs the README's quick start and the shell blocks of
// docs/*.md exactly as written, so that what the documentation promises is
// what the binary does.
//
// Which blocks run is said in the Markdown itself:
//
//   - every fenced ```sh (or ```bash, ```shell) block runs, unless the last
//     non-blank line before its fence is `<!-- doc-test: skip (REASON) -->`
//     (a block that needs a cluster, a download or changes the host);
//   - a command line ending in `# expect: exit N` must exit with status N;
//     every other command must succeed (`set -e`, POSIX sh);
//   - the README's "Quick start" section runs as one session in a copy of
//     the repository (its first block is `make build`); it may not skip a
//     block. Every other block runs alone in an empty directory with the
//     quick start's bin/machineadm first on PATH.
//
// The run (TestDocsRun, build tag doctest: `make doc-test`) needs root: it
// runs each session in a network namespace of its own (`unshare --net`,
// loopback only, no route), with HOME in its temporary directory, and
// checks that the host paths machineadm writes (/etc/kubernetes,
// /var/lib/machineadm, ...) are the same afterwards. The parser's own tests
// run everywhere (`make test`).
package doctest
