#!/usr/bin/env bash
# Captures of a GPU machine for the validation corpus (tests/unit/plugins/module_utils/fixtures/): each GPU's PCIe
# link (sysfs current/max speed and width, lspci -vv's LnkCap/LnkSta, nvidia-smi's PCIe fields) and that of its
# upstream port, idle and then while host-to-device copies load the link, their AER counters, what else the machine
# offers for the validation (DCGM, RDMA devices, MPI, the kernel's "limited by" lines), and, where Open MPI is
# installed, a two-rank NCCL run of roles/validate/files/nccl_bench.py through mpirun --tag-output. Reads only: no
# setting of the machine is changed.
#   OUT=<dir> tests/utils/capture_gpu_machine.sh
set -u
OUT=${OUT:?set OUT to a directory for the captures}
export LC_ALL=C

gpus=$(nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader | sed 's/^0000\(....:\)/\1/' | tr 'A-F' 'a-f')

links() {  # the sysfs link files and lspci's link lines of each GPU and of its upstream port
  local bdf dev up
  for bdf in $gpus; do
    dev=/sys/bus/pci/devices/$bdf
    up=$(basename "$(dirname "$(readlink -f "$dev")")")
    for d in "$bdf" "$up"; do
      echo "## $d ($( [ "$d" = "$bdf" ] && echo GPU || echo "upstream port of $bdf"))"
      for f in current_link_speed current_link_width max_link_speed max_link_width; do
        printf '%s: %s\n' "$f" "$(cat "/sys/bus/pci/devices/$d/$f" 2>&1)"
      done
      lspci -vv -s "$d" 2>&1 | grep -E '^\S|LnkCap:|LnkSta:|LnkCap2:|LnkSta2:|LnkCtl2:|DevSta:|UESta:|CESta:' || true
    done
  done
  nvidia-smi --query-gpu=index,pci.bus_id,pstate,pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max --format=csv
}

{
  echo "# $(date -u +%FT%TZ) $(uname -r); $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | sort | uniq -c)"
  echo "# idle"
  links
} > "$OUT/pcie_links_idle.txt" 2>&1

# Host-to-device copies of 1 GiB from pinned memory on every GPU at once, for about 20 s; the links are read after 8 s.
python3 - > "$OUT/pcie_load.log" 2>&1 <<'PY' &
import time
import torch
n = torch.cuda.device_count()
src = [torch.empty(1 << 30, dtype=torch.uint8).pin_memory() for _ in range(n)]
dst = [torch.empty(1 << 30, dtype=torch.uint8, device="cuda:%d" % i) for i in range(n)]
end, copies, start = time.time() + 20, 0, time.time()
while time.time() < end:
    for i in range(n):
        dst[i].copy_(src[i], non_blocking=True)
    for i in range(n):
        torch.cuda.synchronize(i)
    copies += n
print("copies %d of 1 GiB in %.1f s: %.1f GB/s per GPU" % (copies, time.time() - start,
                                                            copies * (1 << 30) / (time.time() - start) / n / 1e9))
PY
load=$!
sleep 8
{
  echo "# under load: host-to-device copies from pinned memory on every GPU"
  links
} > "$OUT/pcie_links_load.txt" 2>&1
wait $load

{
  for bdf in $gpus; do
    up=$(basename "$(dirname "$(readlink -f "/sys/bus/pci/devices/$bdf")")")
    for d in "$bdf" "$up"; do
      for f in aer_dev_correctable aer_dev_nonfatal aer_dev_fatal aer_rootport_total_err_cor; do
        [ -e "/sys/bus/pci/devices/$d/$f" ] && { echo "## $d $f"; cat "/sys/bus/pci/devices/$d/$f"; }
      done
    done
  done
  echo "## kernel: link bandwidth lines"
  dmesg 2>/dev/null | grep -E 'available PCIe bandwidth|limited by' | head -20
} > "$OUT/pcie_aer.txt" 2>&1

{
  for tool in dcgmi nv-hostengine ibv_devinfo lldpcli mpirun srun mlxlink ethtool lspci; do
    printf '%s: %s\n' "$tool" "$(command -v "$tool" || echo absent)"
  done
  echo "## /sys/class/infiniband"; ls /sys/class/infiniband 2>&1
  echo "## NCCL of torch"; python3 -c 'import torch; print(torch.__version__, torch.cuda.nccl.version())' 2>&1
  if command -v dcgmi >/dev/null; then echo "## dcgmi diag -r 1 -j"; timeout 300 dcgmi diag -r 1 -j 2>&1 | head -c 20000; fi
} > "$OUT/tools.txt" 2>&1
if command -v mpirun >/dev/null && [ "$(nvidia-smi -L | wc -l)" -ge 2 ]; then
  mpirun --version > "$OUT/mpirun_version.txt" 2>&1
  timeout 240 mpirun --allow-run-as-root -np 2 --tag-output -x MASTER_ADDR=127.0.0.1 -x MASTER_PORT=29533 \
    -x NCCL_DEBUG=INFO python3 "$(dirname "$0")/../../roles/validate/files/nccl_bench.py" -b 1M -e 16M -f 4 -n 5 -w 2 \
    > "$OUT/mpirun_tag_output_nccl_bench.txt" 2>&1
fi
ls -la "$OUT"
