# roce.fabric test runner: the peer tiers and the lane scheduler (the VM lane in the background beside the others; 'all'). Sourced by tests/run, which defines REPO, CACHE, VENV, PY, the
# versions and log/die; not run on its own.
# shellcheck shell=bash disable=SC2034  # variables used by the other parts of the runner

# The peer tiers, one row each: name | what it proves | test files (under tests/peer/) | lock held for the run |
# mode, which says where 'peer all' (and 'all') runs the tier:
#   vm      in the VM lane: in the background, one after the other in this order, under the VMs' lock, while the
#           tiers without a lock run in the foreground (they use peers of their own, no VM);
#   last    after both lanes, alone: it starts every peer and asserts that none changed;
#   alone   left out: another tier runs its files on the same boot of the VMs (run it by name);
#   (empty) in the foreground lane, one after the other.
# The VM lane opens with rdma, whose one VM leaves a core to the foreground lane, where the static tiers (with 'all')
# and the tiers without VMs run; the two-VM tiers come after it. With 'all' the "last" tier (check) opens the VM
# lane instead, on the fresh lab, while the foreground lane's static tiers need no peer; the foreground's peer tiers
# wait for it (peers_free). ROCE_PEER_PARALLEL=0 runs every tier in turn.
# A tier is named after its device family (module_utils package, lab folder, docs page).
PEER_TIERS=(
  "firmware|mlxconfig and nic_firmware_image against the firmware simulators (mlxconfig, flint), locally and on lab hosts; the validation's host lock kept by its refresh on a lab host|test_mlxconfig_peer.py test_nic_firmware_image_peer.py test_run_lock_peer.py|"
  "slurm|slurm_node and the node_drain role against the lab's Slurm cluster (Debian's slurmctld, a slurmd on gpu1 and gpu2), in the rolling play of nic_firmware.yml|test_slurm_peer.py|"
  "qos|nic_qos module against the NIC QoS simulator (mlnx_qos, dcb, mlx5 ECN files) on the lab hosts|test_nic_qos_peer.py|"
  "onyx|onyx_roce module against the Onyx simulator over SSH|test_onyx_roce_peer.py|"
  "nvue|nvue_roce against the NVUE simulator (Cumulus Linux) over HTTPS and SSH, and roce_switch on Onyx and Cumulus in one play|test_nvue_roce_peer.py|"
  "esxi|esxi_kernel_setting, vmx_passthru, esxi_ats against vcsim and the ESXi shell over SSH|test_esxi_peer.py|"
  "k8s|k8s_rdma_network and k8s_rdma_job roles against a real kube-apiserver|test_k8s_peer.py|"
  "image|the rdma_image role and container_image with podman: every documented Containerfile linted by hadolint, the inbox image built from a local base|test_rdma_image_peer.py|"
  "rdma|rdma_netns, boot_units, nvme_scratch and the host roles against a lab QEMU VM: real kernel, real reboots, real mdadm|test_rdma_host_args.py test_rdma_netns_peer.py test_boot_units_peer.py test_nvme_scratch_peer.py test_injection_peer.py test_rdma_host_ofed_peer.py|/tmp/roce-vm.lock|vm"
  "validate|on the two Soft-RoCE VMs, the validate role (rping, perftest, faults, report, the contract's DSCP on the wire, MPI and collectives), telemetry and ib_write_bw from the job image's container|test_validate_peer.py test_telemetry_peer.py test_rdma_image_vm_peer.py|/tmp/roce-vm.lock|vm"
  "check|playbooks/roce.yml --check --diff on the whole lab: passes and changes no peer|test_roce_check_mode.py|/tmp/roce-vm.lock|last"
  "telemetry|the rdma_exporter role on the two Soft-RoCE VMs, scraped by a real Prometheus: traffic, device removal, reboot, promtool|test_telemetry_peer.py|/tmp/roce-vm.lock|alone"
)

# One run in the background beside the tiers in the foreground: its output is kept in a file and printed by
# finish_background, which returns its status.
BG_PID="" BG_LOG=""
start_background() {
  BG_LOG=$(mktemp /tmp/roce-beside.XXXXXX)
  "$@" >"$BG_LOG" 2>&1 &
  BG_PID=$!
}
finish_background() {
  local rc=0
  [ -n "$BG_PID" ] || return 0
  wait "$BG_PID" || rc=$?
  log "output of the background run (rc=$rc)"
  cat "$BG_LOG" >&2
  rm -f "$BG_LOG"
  BG_PID=""
  return $rc
}

# What failed, at the end of the output: a tier that fails in the foreground while the background lane runs has its
# output followed by the background's, and CI keeps the end of the log. 'all' names a file (ROCE_FAIL_RECAP) where
# run_recorded keeps the last lines of each command that failed, and prints it as its last word.
RECAP_LINES=60
run_recorded() {
  local name=$1 out rc=0
  shift
  if [ -z "${ROCE_FAIL_RECAP:-}" ]; then
    "$@" || rc=$?
    return $rc
  fi
  out=$(mktemp /tmp/roce-output.XXXXXX)
  "$@" 2>&1 | tee "$out" && rc=0 || rc=${PIPESTATUS[0]}
  if [ "$rc" != 0 ]; then
    { printf '\n== %s failed (rc=%s); its last %d lines (the whole output is above):\n' "$name" "$rc" "$RECAP_LINES"
      tail -n "$RECAP_LINES" "$out"; } >>"$ROCE_FAIL_RECAP"
  fi
  rm -f "$out"
  return "$rc"
}
print_recap() {
  [ -n "${ROCE_FAIL_RECAP:-}" ] && [ -s "$ROCE_FAIL_RECAP" ] || return 0
  log "what failed"
  cat "$ROCE_FAIL_RECAP" >&2
}

# One peer tier by its row; several rows in turn, stopping at the first that fails (in the VM lane, a tier that needs
# vcsim or kube-apiserver waits for their builds).
run_peer_rows() {
  local r
  for r in "$@"; do
    [[ "$NEEDS_NO_BUILD" == *" ${r%%|*} "* ]] || builds_ready
    run_peer_row "$r" || return $?
  done
}
run_peer_row() {
  local name what files lock mode
  IFS='|' read -r name what files lock mode <<<"$1"
  log "peer: $name ($what)"
  local paths=() t=$SECONDS rc=0
  for f in $files; do paths+=("tests/peer/$f"); done
  if [ -n "$lock" ]; then
    # The VMs are shared by every tier that boots them: hold their lock for the whole run.
    (cd "$REPO" && run_recorded "peer: $name" flock "$lock" "$PY" -m pytest -q -p no:cacheprovider --durations=5 "${paths[@]}") || rc=$?
  else
    (cd "$REPO" && run_recorded "peer: $name" "$PY" -m pytest -q -p no:cacheprovider --durations=5 "${paths[@]}") || rc=$?
  fi
  log "peer: $name finished with rc=$rc in $((SECONDS - t)) s"
  return $rc
}

# The tiers that open the VM lane ('all': the "last" ones, which need every peer to themselves) and the file the VM
# lane makes once they ended; the foreground lane's peer tiers wait for it (or for the VM lane to end).
FIRST_ROWS=() PEERS_FREE=""
peers_free() {
  [ -n "$PEERS_FREE" ] || return 0
  [ -e "$PEERS_FREE" ] || log "the peer tiers wait for $(for row in "${FIRST_ROWS[@]}"; do printf '%s ' "${row%%|*}"; done)to give the lab back"
  while [ ! -e "$PEERS_FREE" ] && kill -0 "$BG_PID" 2>/dev/null; do sleep 1; done
}

# The foreground lane: (with 'all') the static tiers, the peer tiers without a lock, then (with 'all') the clients.
free_lane() {
  local rest=$1 tier t
  shift
  # A tier of several commands runs as a process of its own: called here, in a list that takes its status, the
  # shell's errexit would not stop it at its first failing command.
  if [ "${LANES_STATIC:-0}" = 1 ]; then
    for tier in lint sanity unit build ${LANES_COMPAT_HERE:+compat}; do
      t=$SECONDS
      run_recorded "$tier" "$REPO/tests/run" "$tier" || return $?
      log "$tier finished in $((SECONDS - t)) s"
    done
  fi
  local row
  [ $# -eq 0 ] || peers_free
  for row in "$@"; do
    [[ "$NEEDS_NO_BUILD" == *" ${row%%|*} "* ]] || wait_builds || return $?
    run_peer_row "$row" || return $?
  done
  wait_builds || return $?
  [ "$rest" = 1 ] || return 0
  run_recorded clients "$REPO/tests/run" clients
}

# The VM lane: its tiers in turn, then (with 'all') the compat tier, whose two ansible-core releases' units, sanity and
# Galaxy install need no peer: the VM tiers end before the foreground's (measured: tests/bench/results/).
vm_lane() {
  if [ ${#FIRST_ROWS[@]} -gt 0 ]; then
    local first_rc=0
    run_peer_rows "${FIRST_ROWS[@]}" || first_rc=$?
    touch "$PEERS_FREE"
    [ $first_rc = 0 ] || return $first_rc
  fi
  run_peer_rows "$@" || return $?
  if [ "${LANES_STATIC:-0}" = 1 ]; then
    local t=$SECONDS
    run_recorded compat "$REPO/tests/run" compat || return $?
    log "compat finished in $((SECONDS - t)) s"
  fi
}

# Every tier but the "alone" ones (or the tiers named): the VM lane in the background beside the foreground lane,
# then the "last" ones. With LANES_STATIC=1 ('all') lint, sanity, unit and build open the foreground lane and compat
# closes the VM lane (vm_lane); with LANES_REST=1 ('all') the clients close the foreground lane, and the molecule
# scenarios (as 'tests/run molecule' runs them: the ones on the VMs beside the others) follow both lanes, before the
# "last" tiers.
peer_all() {
  local row name what files lock mode rc=0 lane_rc=0 LANES_COMPAT_HERE=
  local vm=() free=() last=() only=" $* " rest=${LANES_REST:-0}
  for row in "${PEER_TIERS[@]}"; do
    IFS='|' read -r name what files lock mode <<<"$row"
    if [ $# -gt 0 ]; then
      [[ "$only" == *" $name "* ]] || continue
      [ "$mode" = alone ] && mode=vm
    fi
    case "$mode" in
      alone) ;;
      vm) vm+=("$row") ;;
      last) last+=("$row") ;;
      *) free+=("$row") ;;
    esac
  done
  # The Go builds beside the first tiers ('all'), before either lane starts.
  [ "${LANES_STATIC:-0}" != 1 ] || start_builds
  if [ "${ROCE_PEER_PARALLEL:-1}" != 1 ]; then
    LANES_COMPAT_HERE=1
    free_lane "$rest" "${free[@]}" || return $?
    run_peer_rows "${vm[@]}" || return $?
  else
    if [ "${LANES_STATIC:-0}" = 1 ] && [ ${#last[@]} -gt 0 ] && [ ${#vm[@]} -gt 0 ] && [ -x "$(kube_apiserver_dir)/kube-apiserver" ]; then
      # 'all': the check tier first, on the lab as it starts, beside the static tiers (measured: it ended the run
      # alone). Not where kube-apiserver is still to be built (minutes on a cold cache): the foreground would wait.
      FIRST_ROWS=("${last[@]}")
      last=()
      PEERS_FREE=$(mktemp -u /tmp/roce-peers-free.XXXXXX)
    fi
    if [ ${#vm[@]} -gt 0 ]; then
      log "lanes: $(for row in "${FIRST_ROWS[@]}" "${vm[@]}"; do printf '%s ' "${row%%|*}"; done)$([ "${LANES_STATIC:-0}" = 1 ] && echo "compat ")in the background (output at its end)"
      start_background vm_lane "${vm[@]}"
    else
      LANES_COMPAT_HERE=1
    fi
    free_lane "$rest" "${free[@]}" || rc=$?
    wait_builds || rc=$?
    finish_background || lane_rc=$?
    [ -z "$PEERS_FREE" ] || rm -f "$PEERS_FREE"
    [ $rc = 0 ] || return $rc
    [ $lane_rc = 0 ] || return $lane_rc
  fi
  if [ "$rest" = 1 ]; then
    tier_molecule "" || return $?
  fi
  run_peer_rows "${last[@]}"
}

# tests/run peer: every tier; peer NAME: one tier; peer NAME NAME...: those tiers, as 'peer all' would run them.
tier_peer() {
  need_root
  local row name known=() wanted=() which
  for which in "${@:-all}"; do
    wanted+=("$which")
  done
  for row in "${PEER_TIERS[@]}"; do known+=("${row%%|*}"); done
  if [ "${wanted[*]}" = all ]; then
    peer_all
    return
  fi
  for which in "${wanted[@]}"; do
    [[ " ${known[*]} " == *" $which "* ]] || die "unknown peer '$which' (known: ${known[*]})"
  done
  if [ ${#wanted[@]} -gt 1 ]; then
    peer_all "${wanted[@]}"
    return
  fi
  for row in "${PEER_TIERS[@]}"; do
    [ "${row%%|*}" = "${wanted[0]}" ] && { run_peer_row "$row"; return; }
  done
}

tier_all() {
  local t0=$SECONDS rc=0
  need_root
  ROCE_FAIL_RECAP=$(mktemp /tmp/roce-failed.XXXXXX)
  export ROCE_FAIL_RECAP
  # Two lanes: what runs on the lab VMs in the background; lint, sanity, unit, build, the peer tiers without VMs, the
  # clients and the other scenarios in the foreground; then peer check alone (peer_all).
  LANES_STATIC=1 LANES_REST=1 peer_all || rc=$?
  print_recap
  rm -f "$ROCE_FAIL_RECAP"
  [ $rc = 0 ] || return $rc
  log "all tiers passed in $((SECONDS - t0)) s"
}
