#!/usr/bin/env bash
# The validate role end to end on a GPU host through a local connection: discovery (GPUs, nvidia-smi
# topology), GPU health, NCCL through roce.fabric.nccl_test on the normal path, then again with
# NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 (the report must flag the socket fallback), and a check-mode run.
#   OUT=<dir> tests/bench/gpu_role_run.sh COLLECTIONS_DIR
# COLLECTIONS_DIR holds ansible_collections/roce/fabric; ansible-core must be importable.
set -u
COLL=${1:?collections directory}
OUT=${OUT:?set OUT to a directory for the results}
export ANSIBLE_COLLECTIONS_PATH=$COLL ANSIBLE_NOCOLOR=1 ANSIBLE_HOST_KEY_CHECKING=false PYTHONUNBUFFERED=1
PLAY=$COLL/ansible_collections/roce/fabric/playbooks/validate.yml
# The GPU machines lent here have no RDMA NIC: discovery reports that, without failing the run for it.
common=(-i "localhost," -c local -e "ansible_python_interpreter=$(command -v python3)" -e roce_validate_hosts=localhost
        -e validate_require_rdma=false)

ansible-playbook "${common[@]}" -e "validate_report_dir=$OUT/normal" "$PLAY" > "$OUT/role_normal.log" 2>&1
echo "normal path: rc=$?"; tail -n 25 "$OUT/role_normal.log"
ansible-playbook "${common[@]}" -e "validate_report_dir=$OUT/socket" \
  -e '{"validate_nccl_env_extra": {"NCCL_P2P_DISABLE": "1", "NCCL_SHM_DISABLE": "1"}, "validate_nccl_max_bytes": "64M"}' \
  "$PLAY" > "$OUT/role_socket.log" 2>&1
echo "socket fallback: rc=$? (a failed play is the expected outcome)"; tail -n 25 "$OUT/role_socket.log"
ansible-playbook "${common[@]}" --check -e "validate_report_dir=$OUT/check" "$PLAY" > "$OUT/role_check.log" 2>&1
echo "check mode: rc=$? report written: $(test -e "$OUT/check/report.json" && echo yes || echo no)"; tail -n 8 "$OUT/role_check.log"
