#!/usr/bin/env bash
# Installs the Debian packages machineadm's tests use. Idempotent.
#   util-linux  unshare (tests run machineadm in a private network namespace)
#   containerd  the real containerd the host-preparation tests start
#   cloud-init  `cloud-init schema` validates rendered cloud-config; its
#               write_files/runcmd code applies it in the round-trip test
#   ignition    `ignition-validate` checks rendered Ignition configs
#   systemd     `systemd-analyze verify` checks contrib/systemd units
#   openssl, curl, wget  what the rendered shell stub uses on a machine
#   dash, python3-yaml  FuzzSh runs words through dash; FuzzYAMLString loads
#               YAML with cloud-init's loader (PyYAML)
#   swtpm, swtpm-tools, tpm2-tools  a real software TPM 2.0 for the sealed-secrets tpm2 tests
#   rpm         `rpm -qip` checks the release's rpm packages (hack/release)
#   samba, samba-ad-dc, samba-ad-provision, winbind  a real Active Directory
#               domain controller for the Linux domain-join test
#   adcli, krb5-user  the Linux domain join itself and klist -k in its test
#   wine64, gcc-mingw-w64-x86-64-posix  hack/wine-test.sh runs the Windows
#               build under wine with a stub bcryptprimitives.dll it compiles
#   docker-registry  the distribution registry (2.8) the e2e's render scenario
#               serves the agent from, with token authentication (its service
#               is not used: the test starts its own instance in the e2e's
#               network namespace)
set -euo pipefail
pkgs=(util-linux containerd runc cloud-init ignition systemd dash python3-yaml openssl curl wget iproute2 kmod procps swtpm swtpm-tools tpm2-tools rpm
	samba samba-ad-dc samba-ad-provision winbind adcli krb5-user wine64 gcc-mingw-w64-x86-64-posix
	docker-registry)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
	if [ "$(id -u)" != 0 ]; then
		echo "install-deps: missing Debian packages (run as root to install): ${missing[*]}" >&2
		exit 0
	fi
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
