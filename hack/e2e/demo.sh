#!/usr/bin/env bash
# `make demo`, `make demo-kubectl`, `make demo-down` (and the check `make
# e2e` runs first): a two-node cluster made by machineadm for a person to
# watch, then use, then remove.
#
#   demo.sh up          build, boot cp1 and w1, create the cluster, join the
#                       worker (e2e scenario 1), and keep it running
#   demo.sh kubectl ARG...  kubectl on the kept cluster, inside its network
#                       namespace
#   demo.sh down        remove the demo: machines, mounts, cgroups, bridge,
#                       network namespace and the files in $DEMO_DIR but
#                       the last run's log
#   demo.sh check       exit 1, saying why, while a demo cluster is up,
#                       being made or left behind (`make e2e` runs it first:
#                       the e2e's clean-up would remove the demo's machines)
#
# `up` prints a short narrative; everything the commands it runs print
# (make build, e2e-prepare, go test -v) goes to $DEMO_DIR/demo.log, and is
# shown, its last lines, only when something fails. The cluster lives in
# the network namespace $DEMO_NETNS (made here, with `ip netns add`, so it
# outlives the test); the test writes the narrative of its steps, the
# kubeconfig and both outcome reports into $DEMO_DIR (test/e2e/demo.go).
#
# $DEMO_DIR/state says where the demo is: "making PID TIME" while `up`
# runs, "up - TIME" once the cluster is kept. It is created with O_EXCL, so
# of two `make demo` started together one goes on and the other stops.
source "$(dirname "$0")/lib.sh"

cd "$REPO_ROOT"
STATE=$DEMO_DIR/state
LOG=$DEMO_DIR/demo.log
NARRATIVE=$DEMO_DIR/narrative
KUBECONFIG_FILE=$DEMO_DIR/kubeconfig
KUBECTL=$CACHE/bin/kubectl
TEST_BIN=$DEMO_DIR/e2e.test
# Width of a step's label, padded with dots (as demoStepWidth in
# test/e2e/demo.go).
STEP_WIDTH=84

# status prints where the demo is: "none", "making PID TIME", "up TIME" or
# "leftover" (a demo that did not finish, whose namespace is gone, or a
# state file this script did not write).
status() {
  local state= pid= since=
  if [ -f "$STATE" ]; then
    read -r state pid since <"$STATE" || true
  fi
  case "$state" in
  making)
    if kill -0 "$pid" 2>/dev/null && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q 'demo\.sh up'; then
      echo "making $pid $since"
    else
      echo leftover
    fi
    ;;
  up)
    if [ -e "$DEMO_NETNS_PATH" ]; then echo "up $since"; else echo leftover; fi
    ;;
  *)
    if [ -e "$DEMO_NETNS_PATH" ] || [ -e "$STATE" ]; then echo leftover; else echo none; fi
    ;;
  esac
}

# refuse_if_present WHO: exit 1 with a message for a person unless no demo
# is up, being made or left behind.
refuse_if_present() {
  local who=$1 st
  st=$(status)
  case "$st" in
  none) return 0 ;;
  making*)
    set -- $st
    echo "$who: \`make demo\` is making its cluster right now (pid $2, started $3)." >&2
    ;;
  up*)
    set -- $st
    echo "$who: a demo cluster is up (made by \`make demo\` at $2)." >&2
    echo "  use it:    make demo-kubectl ARGS=\"get pods -A\"" >&2
    ;;
  leftover)
    echo "$who: a \`make demo\` that did not finish left its machines or network namespace ($DEMO_NETNS) behind." >&2
    ;;
  esac
  case "$st" in
  making*) echo "  stop it and remove what it made: make demo-down" >&2 ;;
  *) echo "  remove it: make demo-down" >&2 ;;
  esac
  exit 1
}

# remove takes the demo down: every machine of the e2e harness with its
# mounts and cgroups (cleanup.sh, run in the demo's namespace so that its
# bridge goes too), the namespace, and the demo's files but the log.
remove() {
  mkdir -p "$DEMO_DIR"
  if [ -e "$DEMO_NETNS_PATH" ]; then
    nsenter --net="$DEMO_NETNS_PATH" -- "$(dirname "$0")/cleanup.sh" >>"$LOG" 2>&1 ||
      { echo "hack/e2e/cleanup.sh failed; its output is at the end of $LOG" >&2; return 1; }
    # A demo being stopped may remove it at the same time.
    ip netns del "$DEMO_NETNS" 2>/dev/null || [ ! -e "$DEMO_NETNS_PATH" ]
  else
    "$(dirname "$0")/cleanup.sh" >>"$LOG" 2>&1 ||
      { echo "hack/e2e/cleanup.sh failed; its output is at the end of $LOG" >&2; return 1; }
  fi
  rm -rf "$NARRATIVE" "$KUBECONFIG_FILE" "$DEMO_DIR"/*-report.json "$DEMO_DIR/kube-cache" \
    "$DEMO_DIR/prepare.out" "$TEST_BIN" "$STATE"
}

# kubectl_in_netns ARG...: the cached kubectl, in the demo's namespace,
# with the demo's kubeconfig; its discovery cache stays in $DEMO_DIR.
kubectl_in_netns() {
  nsenter --net="$DEMO_NETNS_PATH" -- env KUBECONFIG="$KUBECONFIG_FILE" \
    "$KUBECTL" --cache-dir "$DEMO_DIR/kube-cache" "$@"
}

# dur SECONDS: 9s, 1m02s.
dur() {
  if [ "$1" -lt 60 ]; then echo "${1}s"; else printf '%dm%02ds\n' $(($1 / 60)) $(($1 % 60)); fi
}

# step LABEL: the label padded with dots, the line left open for its result.
step() {
  local pad=$((STEP_WIDTH - ${#1} - 1))
  [ "$pad" -ge 3 ] || pad=3
  printf '%s %s ' "$1" "$(printf '%*s' "$pad" '' | tr ' ' .)"
}

# child is the process group `up` runs now (in the background, so that
# the INT/TERM trap runs at once and stops it).
child=

# run CMD...: CMD in a process group of its own, waited for; its status.
run() {
  local rc=0
  setsid "$@" &
  child=$!
  wait "$child" || rc=$?
  child=
  return "$rc"
}

# prepare_with_progress: e2e-prepare (prepare.sh), its output to the log;
# for a person, a line for each component, root filesystem or host package
# it has to build or install (nothing when everything is cached), then the
# outcome.
prepare_with_progress() {
  local start=$SECONDS open=1 built=0 cached=0 images=0 line msg rc=0 out=$DEMO_DIR/prepare.out
  say() {
    [ "$open" = 1 ] && echo
    open=0
    echo "    $*"
  }
  : >"$out"
  # The demo runs scenario 1: the core set's components are enough (not the
  # previous minor the upgrade scenario bootstraps from).
  MACHINEADM_E2E_CORE=1 setsid "$(dirname "$0")/prepare.sh" >"$out" 2>&1 &
  child=$!
  while IFS= read -r line; do
    msg=${line#*\[e2e\] }
    case "$msg" in
    "build "*": cached") cached=$((cached + 1)) ;;
    "build "*": "*s) built=$((built + 1)) ;;
    "build "*) say "building ${msg#build }" ;;
    "image "*": built") images=$((images + 1)) ;;
    "rootfs: debootstrap"*) say "making the machines' Debian root filesystem (debootstrap, apt)" ;;
    "rootfs: built in"*) say "root filesystem ${msg#rootfs: }" ;;
    "apt-get install "*) say "installing host packages: ${msg#apt-get install }" ;;
    esac
  done < <(tail -n +1 -f --pid="$child" "$out")
  wait "$child" || rc=$?
  child=
  cat "$out" >>"$LOG"
  rm -f "$out"
  local took
  took=$(dur $((SECONDS - start)))
  if [ "$rc" != 0 ]; then
    [ "$open" = 1 ] || printf '    '
    echo "FAILED"
    return 1
  fi
  if [ "$built" = 0 ] && [ "$images" = 0 ] && [ "$open" = 1 ]; then
    echo "$took (all $cached cached)"
  else
    say "done in $took: $built built, $cached cached, $images images built"
  fi
}

# fail WHAT: the end of the log, for a person, and exit 1 (the EXIT trap
# removes what was made).
fail() {
  echo
  echo "make demo: $1. The end of its output:"
  echo
  tail -n 40 "$LOG" | sed 's/^/  /'
  echo
  echo "Full output: $LOG"
  echo "What the demo made is removed now; a new \`make demo\` starts from the beginning."
  exit 1
}

up() {
  [ "$(id -u)" = 0 ] || { echo "make demo: needs root (systemd-nspawn, network namespaces, cgroups)" >&2; exit 1; }
  refuse_if_present "make demo"
  mkdir -p "$DEMO_DIR"
  chmod 0700 "$DEMO_DIR"
  if ! (set -o noclobber; echo "making $$ $(date +%H:%M:%S)" >"$STATE") 2>/dev/null; then
    refuse_if_present "make demo"
    exit 1
  fi
  made=0
  trap 'if [ "$made" != 1 ]; then remove >>"$LOG" 2>&1 || true; fi' EXIT
  trap 'echo; echo "make demo: stopped; removing what it made"; [ -z "$child" ] || kill -TERM -- "-$child" 2>/dev/null; exit 130' INT TERM
  : >"$LOG"
  chmod 0600 "$LOG"
  ip netns add "$DEMO_NETNS"

  echo "machineadm demo: a Kubernetes $KUBERNETES_VERSION cluster of two machines, made by machineadm."
  echo "Everything runs on this host, offline: no Docker, no downloads once the cache is built."
  echo
  local t=$SECONDS
  step "Building machineadm and the test harness (make build, go test -c)"
  run "${MAKE:-make}" --no-print-directory build >>"$LOG" 2>&1 || { echo FAILED; fail "make build failed"; }
  run env CGO_ENABLED=0 go test -c -trimpath -tags e2e -o "$TEST_BIN" ./test/e2e/ >>"$LOG" 2>&1 || { echo FAILED; fail "compiling the e2e test failed"; }
  dur $((SECONDS - t))
  step "Building the cluster's components, their images and the machines' root filesystem"
  prepare_with_progress || fail "building the components (make e2e-prepare) failed"

  # Scenario 1 in the demo's namespace, run from its package directory as
  # go test would; the test narrates the steps.
  (umask 077 && : >"$NARRATIVE")
  echo "== $TEST_BIN -test.v -test.run '^TestScenarios\$' (in test/e2e)" >>"$LOG"
  (cd test/e2e && MACHINEADM_E2E_CACHE=$CACHE MACHINEADM_E2E_DEMO_DIR=$DEMO_DIR MACHINEADM_E2E_NETNS=$DEMO_NETNS_PATH \
    exec setsid "$TEST_BIN" -test.v -test.count=1 -test.timeout 30m -test.run '^TestScenarios$') >>"$LOG" 2>&1 &
  child=$!
  tail -n +1 -f --pid="$child" "$NARRATIVE" &
  local tailpid=$! rc=0
  wait "$child" || rc=$?
  child=
  wait "$tailpid" || true
  if [ "$rc" != 0 ]; then
    [ -z "$(tail -c 1 "$NARRATIVE")" ] || echo
    fail "the cluster could not be made (the test exited $rc)"
  fi
  echo "up - $(date +%H:%M:%S)" >"$STATE"
  made=1

  echo
  echo "$ kubectl get nodes -o wide"
  kubectl_in_netns get nodes -o wide 2>&1 || true
  echo
  echo "The cluster keeps running. It lives in the network namespace $DEMO_NETNS (no route out):"
  echo "  make demo-kubectl ARGS=\"get pods -A\"   kubectl inside that namespace"
  echo "  kubeconfig: $KUBECONFIG_FILE (API server $(sed -n 's/^ *server: *//p' "$KUBECONFIG_FILE" | head -n 1))"
  echo "  make demo-down                         removes the machines, network, mounts and cgroups"
}

kubectl_cmd() {
  case "$(status)" in
  up*) ;;
  making*) echo "make demo-kubectl: \`make demo\` is still making the cluster; try again when it is done." >&2; exit 1 ;;
  leftover) echo "make demo-kubectl: the demo did not finish; \`make demo-down\` removes what it left, \`make demo\` makes a new one." >&2; exit 1 ;;
  *) echo "make demo-kubectl: no demo cluster is up; \`make demo\` makes one." >&2; exit 1 ;;
  esac
  [ $# -gt 0 ] || set -- get nodes -o wide
  kubectl_in_netns "$@"
}

down() {
  local st
  st=$(status)
  case "$st" in
  none)
    echo "make demo-down: no demo cluster; nothing to remove."
    rm -f "$STATE"
    return 0
    ;;
  making*)
    set -- $st
    echo "make demo-down: stopping \`make demo\` (pid $2), which is making its cluster"
    kill -TERM "$2" 2>/dev/null || true
    for _ in $(seq 1 120); do
      kill -0 "$2" 2>/dev/null || break
      sleep 0.5
    done
    ;;
  esac
  remove
  echo "make demo-down: removed the demo cluster (machines, their mounts and cgroups, the bridge, network namespace $DEMO_NETNS)."
  [ -f "$LOG" ] && echo "The last demo's log stays in $LOG."
  return 0
}

case "${1:-}" in
up) up ;;
kubectl) shift; kubectl_cmd "$@" ;;
down) down ;;
check) refuse_if_present "${2:-make e2e}" ;;
*) echo "usage: demo.sh up | kubectl ARG... | down | check [WHO]" >&2; exit 2 ;;
esac
