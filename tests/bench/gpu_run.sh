#!/usr/bin/env bash
# The GPU-machine run behind docs/validation.md's numbers and the fixtures in
# tests/unit/plugins/module_utils/fixtures/{nccl,gpu}/*_gpu_run*: GPU health, the NCCL benchmark
# on the normal path and with NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 (socket transport), the log
# check on both, and the comparison with a direct PyTorch measurement. Clocks are only read here
# (no --lock-clocks): a shared or leased GPU must keep its settings.
#   OUT=<dir> tests/bench/gpu_run.sh [ROOT]
# ROOT is the collection checkout (default: this script's repository).
set -u
ROOT=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
OUT=${OUT:?set OUT to a directory for the results}
FILES=$ROOT/roles/validate/files
export PYTHONUNBUFFERED=1
logs=$(mktemp -d)
step() { printf '== %s (%s)\n' "$*" "$(date -u +%T)"; }

step topology
{ nvidia-smi topo -m; echo; nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,clocks.max.sm,clocks.max.mem --format=csv; } \
  > "$OUT/topo_and_query.txt" 2>&1
cat "$OUT/topo_and_query.txt"

step gpu health
timeout 120 python3 "$FILES/gpu_health.py" > "$OUT/gpu_health.json" 2> "$logs/gpu_health.err"
echo "rc=$?"; cat "$logs/gpu_health.err"; head -c 3000 "$OUT/gpu_health.json"

step nccl_bench normal path
NCCL_DEBUG=INFO NCCL_DEBUG_FILE="$logs/p2p.%h.%p" timeout 240 python3 "$FILES/nccl_bench.py" --nproc 2 \
  -b 1M -e 1G -f 4 -n 20 -w 5 --port 29530 > "$OUT/nccl_bench_p2p.txt" 2>&1
echo "rc=$?"; cat "$OUT/nccl_bench_p2p.txt"; cat "$logs"/p2p.* > "$OUT/nccl_p2p_info.log"

step nccl_bench socket fallback
NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_DEBUG=INFO NCCL_DEBUG_FILE="$logs/sock.%h.%p" timeout 240 \
  python3 "$FILES/nccl_bench.py" --nproc 2 -b 1M -e 64M -f 4 -n 5 -w 2 --port 29540 > "$OUT/nccl_bench_socket.txt" 2>&1
echo "rc=$?"; cat "$OUT/nccl_bench_socket.txt"; cat "$logs"/sock.* > "$OUT/nccl_socket_info.log"

step log check
python3 - "$ROOT" "$OUT" <<'PY' 2>&1 | tee "$OUT/log_check.txt"
import importlib.util, json, sys
root, out = sys.argv[1], sys.argv[2]
spec = importlib.util.spec_from_file_location("_nccl", root + "/plugins/module_utils/validate/nccl.py")
nccl = importlib.util.module_from_spec(spec); spec.loader.exec_module(nccl)
for name in ("p2p", "socket"):
    log = open("%s/nccl_%s_info.log" % (out, name)).read()
    check = nccl.check_log(log)
    print(name, "passed" if check["passed"] else "FLAGGED", json.dumps(dict(network=check["network"],
          transports=check["transports"], findings=[(f["severity"], f["code"], f["message"]) for f in check["findings"]])))
    for table in nccl.parse_all_results(open("%s/nccl_bench_%s.txt" % (out, name)).read()):
        print("  %s avg busbw %.2f GB/s max %.2f GB/s wrong %d verdict %s" % (table["collective"], table["avg_busbw"],
              table["max_busbw"], table["wrong_total"], nccl.results_verdict(table)))
PY

step nccl_bench vs direct torch
timeout 240 python3 "$ROOT/tests/bench/nccl_vs_torch.py" --nproc 2 2>&1 | tee "$OUT/nccl_vs_torch.txt"
rm -rf "$logs"
step finished
