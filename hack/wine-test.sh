#!/usr/bin/env bash
# Runs the windows/amd64 build for real under Debian's wine64 (issue 12):
# the binary's `version`, `config validate`, `render` and
# `bootstrap --dry-run`, and the Windows-only unit tests of the Windows
# packages (GOOS=windows go test -c, then run under wine).
#
# Debian's wine 8.0 has no bcryptprimitives.dll, which Go's runtime loads
# from system32 at start (ProcessPrng); the binary would die at once. A stub
# DLL (hack/wine/testdata/bcryptprimitives.c: ProcessPrng via advapi32's
# SystemFunction036) is built here with gcc-mingw-w64-x86-64-posix and
# copied into the test prefix's drive_c/windows/system32. It is a test
# fixture only.
#
# Needs: wine64, gcc-mingw-w64-x86-64-posix (hack/install-deps.sh). Without
# them it skips, unless MACHINEADM_REQUIRE_WINE=1 (CI), where it fails.
# Takes about 1-2 min warm (the Windows cross-build of kubeadm adds ~3 min
# cold); the wine prefix is made fresh each run (~20 s).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

skip() {
	if [ "${MACHINEADM_REQUIRE_WINE:-}" = 1 ]; then echo "wine-test: $1" >&2; exit 1; fi
	echo "wine-test: SKIP: $1"; exit 0
}
wine=$(command -v wine64 || true)
[ -n "$wine" ] || { [ -x /usr/lib/wine/wine64 ] && wine=/usr/lib/wine/wine64; }
[ -n "$wine" ] || skip "wine64 not installed"
cc=$(command -v x86_64-w64-mingw32-gcc-posix || true)
[ -n "$cc" ] || skip "x86_64-w64-mingw32-gcc-posix not installed (gcc-mingw-w64-x86-64-posix)"

work=$(mktemp -d /tmp/machineadm-wine.XXXXXX)
export WINEPREFIX="$work/prefix" WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
cleanup() { wineserver=$(dirname "$wine")/wineserver; [ -x "$wineserver" ] && "$wineserver" -k 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

echo "== stub bcryptprimitives.dll (test fixture)"
"$cc" -shared -O2 -o "$work/bcryptprimitives.dll" hack/wine/testdata/bcryptprimitives.c hack/wine/testdata/bcryptprimitives.def -ladvapi32
"$wine" wineboot -i >/dev/null 2>&1
cp "$work/bcryptprimitives.dll" "$WINEPREFIX/drive_c/windows/system32/"
# The worker spec's token file (C:\ProgramData\machineadm\secrets) is made
# below with `token generate --out`, after a dry run without it has failed.

echo "== windows/amd64 binary"
make -s build-all PLATFORMS=windows/amd64 >/dev/null
exe="$repo/bin/machineadm-windows-amd64.exe"
win() { "$wine" "$exe" "$@"; }
zpath() { echo "Z:${1//\//\\}"; } # a Linux path as wine's Z: drive path

fail=0
check() { # check NAME WANT_RC OUTPUT_PATTERN -- ARGS...
	local name=$1 want=$2 pattern=$3; shift 4
	local out rc=0
	out=$(win "$@" 2>&1) || rc=$?
	if [ "$rc" != "$want" ] || ! grep -qE -- "$pattern" <<<"$out"; then
		echo "FAIL $name: exit $rc (want $want), output:"; echo "$out" | tail -20; fail=1
	else
		echo "ok   $name (exit $rc)"
	fi
}

spec="$work/worker.yaml"
cat >"$spec" <<'YAML'
apiVersion: machineadm.io/v1alpha1
kind: MachineBootstrapConfig
spec:
  role: Worker
  kubernetes: {version: v1.37.2}
  join:
    apiServerEndpoint: cp.demo.example:6443
    token: {file: 'C:\ProgramData\machineadm\secrets\bootstrap-token'}
    caCertHashes: ["sha256:8e0b8f35d5a4b1a4a6a2f4b5ad1c0b0bd7d5b3f0c37c7b4ddc2b1e5f5a2c9d10"]
YAML
cp "$spec" "$work/domain.yaml"
cat >>"$work/domain.yaml" <<'YAML'
  host:
    domainJoin:
      domain: corp.example.com
      offlineJoinBlob: {file: 'C:\ProgramData\machineadm\secrets\djoin.txt'}
YAML
sed 's/role: Worker/role: ControlPlane/' "$spec" >"$work/cp.yaml"
sha=$(printf '%064d' 0)

check "version" 0 'windows/amd64' -- version
check "version names kubeadm" 0 'v1\.37\.2' -- version
check "config validate worker" 0 'valid machineadm.io/v1alpha1' -- config validate -f "$(zpath "$spec")"
check "config validate domain join (offline blob)" 0 'valid' -- config validate -f "$(zpath "$work/domain.yaml")"
check "config validate refuses a Windows control plane" 2 'Windows machines can only be workers' -- config validate -f "$(zpath "$work/cp.yaml")"
check "config defaults: npipe CRI socket" 0 'npipe:////./pipe/containerd-containerd' -- config defaults
check "render powershell" 0 'Register-ScheduledTask' -- render -f "$(zpath "$work/domain.yaml")" --format powershell --agent-url https://downloads.example.com/machineadm.exe --agent-sha256 "$sha"
check "render unattend" 0 'pass="specialize"' -- render -f "$(zpath "$spec")" --format unattend --agent-url https://downloads.example.com/machineadm.exe --agent-sha256 "$sha"
# A dry run reads the same inputs as a real run: without the token file it
# fails in inputs-check naming the field (exit 1); with the file that
# `token generate --out` writes, it plans.
check "bootstrap --dry-run without the token file" 1 'spec.join.token' -- bootstrap -f "$(zpath "$spec")" --dry-run --dry-run-dir "$(zpath "$work/dry-missing")"
check "token generate --out" 0 'wrote a new bootstrap token' -- token generate --out 'C:\ProgramData\machineadm\secrets\bootstrap-token'
# wine's dism.exe exits 0 and prints nothing, so windows-features cannot
# read the Containers feature's state: the dry run fails there, classified
# (HostPreparationFailed, exit 1). The rest of the workflow runs with that
# phase skipped.
check "bootstrap --dry-run: wine's DISM prints no feature state" 1 'HostPreparationFailed' -- bootstrap -f "$(zpath "$spec")" --dry-run --dry-run-dir "$(zpath "$work/dry-dism")"
check "bootstrap --dry-run" 0 'machineadm bootstrap: Succeeded' -- bootstrap -f "$(zpath "$spec")" --dry-run --dry-run-dir "$(zpath "$work/dry")" --skip-phases windows-features
# The report's Windows path (C:/ProgramData/machineadm/report.json) under the
# dry run's directory, without its drive.
if ! grep -qs '"result": *"Succeeded"' "$work/dry/ProgramData/machineadm/report.json"; then
	echo "FAIL bootstrap --dry-run: no report with result Succeeded at $work/dry/ProgramData/machineadm/report.json"; find "$work/dry" -name '*.json'; fail=1
fi
if ! grep -qs 'containerRuntimeEndpoint: npipe:////./pipe/containerd-containerd' "$work/dry/kubeadm/config.yaml"; then
	echo "FAIL bootstrap --dry-run: kubeadm's kubelet config does not use the npipe endpoint"; fail=1
fi

echo "== Windows unit tests under wine"
runtests() { # runtests PKG REGEXP: compile for Windows, run in the package directory
	local pkg=$1 re=$2 bin out rc=0
	bin="$work/$(basename "$pkg").test.exe"
	GOOS=windows CGO_ENABLED=0 go test -trimpath -c -o "$bin" "./$pkg"
	out=$(cd "$pkg" && "$wine" "$bin" -test.run "$re" -test.v 2>&1) || rc=$?
	if [ "$rc" != 0 ] || ! grep -q '^PASS' <<<"$out"; then
		echo "FAIL go test $pkg -run '$re' under wine:"; echo "$out" | tail -30; fail=1
	else
		echo "ok   go test $pkg -run '$re' ($(grep -c '^--- PASS' <<<"$out") tests)"
	fi
}
runtests pkg/apis/machineadm/validation '^(TestWindows|TestLinuxRules|TestOSDefault|TestUnknownOS)'
# TestStepsWithFakes needs t.TempDir, whose cleanup fails under wine 8
# (see docs/windows.md); the rest run.
runtests pkg/host/windows '^(TestCommandLineRoundTrip|TestContainerdConfig|TestFeatures|TestKubeletServiceAndCommand|TestQuoteArg)$'
runtests pkg/host/files '^TestWindows'
runtests pkg/report '^TestWindowsHostPath$'
runtests pkg/atomicfile '^(TestNoHardLinksErrorSaysWhyWindows|TestCreateWindows)$'
runtests pkg/host/domainjoin '^(TestNewPlanAndArgs|TestDecide|TestConfs|TestAdcliHint|TestDecodeBlob|TestRebootPending)$'

[ "$fail" = 0 ] && echo "wine-test: PASS" || { echo "wine-test: FAIL"; exit 1; }
