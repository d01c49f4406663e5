# roce.fabric test runner: setup (apt, QEMU, venv, dependency collections, vcsim and kube-apiserver builds, the test tree). Sourced by tests/run, which defines REPO, CACHE, VENV, PY, the
# versions and log/die; not run on its own.
# shellcheck shell=bash disable=SC2034  # variables used by the other parts of the runner

need_root() {
  [ "$(id -u)" = 0 ] || die "the lab needs root (network and mount namespaces); run as root"
}

setup_apt() {
  local missing=()
  for pkg in $APT_PACKAGES; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  need_root
  log "apt: installing ${missing[*]}"
  # Keep package scripts from starting an sshd on this machine: the lab starts its own.
  local created_policy=0
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d && created_policy=1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  [ $created_policy = 1 ] && rm -f /usr/sbin/policy-rc.d
  return 0
}

# The lab's QEMU VMs (lab/rdma/peer_qemu.py): QEMU >= 8 for the SR-IOV capable igb NIC (bookworm's own
# QEMU 7.2 has none: take it from bookworm-backports, on the mirror this machine's apt already uses),
# debootstrap for the guest image.
VM_APT_PACKAGES=(debootstrap qemu-utils e2fsprogs)
VM_BACKPORTS_LIST=/etc/apt/sources.list.d/roce-fabric-backports.sources
APT_GET=(apt-get -o DPkg::Lock::Timeout=600 -qq)

qemu_major() { { qemu-system-x86_64 --version 2>/dev/null || true; } | sed -n 's/^QEMU emulator version \([0-9]*\).*/\1/p'; }

setup_vm_tools() {
  local missing=() pkg major
  for pkg in "${VM_APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
  done
  major=$(qemu_major)
  [ ${#missing[@]} -eq 0 ] && [ "${major:-0}" -ge 8 ] && return 0
  need_root
  local codename suite=() mirror
  # shellcheck disable=SC1091
  codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
  if [ "$codename" = bookworm ]; then
    # shellcheck disable=SC2016  # apt's own $(FIELD) placeholders
    if ! apt-get indextargets --format '$(RELEASE)' | grep -qx bookworm-backports; then
      # shellcheck disable=SC2016
      mirror=$(apt-get indextargets --format '$(SITE) $(RELEASE)' | awk '$2 == "bookworm" {print $1; exit}')
      [ -n "$mirror" ] || die "no bookworm entry in this machine's apt sources to take the mirror from"
      log "apt: adding bookworm-backports from $mirror ($VM_BACKPORTS_LIST)"
      printf 'Types: deb\nURIs: %s\nSuites: bookworm-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
        "$mirror" > "$VM_BACKPORTS_LIST"
    fi
    suite=(-t bookworm-backports)
  fi
  log "apt: installing qemu-system-x86 ${suite[*]} and ${VM_APT_PACKAGES[*]}"
  DEBIAN_FRONTEND=noninteractive "${APT_GET[@]}" update
  DEBIAN_FRONTEND=noninteractive "${APT_GET[@]}" install -y --no-install-recommends "${VM_APT_PACKAGES[@]}" >/dev/null
  DEBIAN_FRONTEND=noninteractive "${APT_GET[@]}" install -y --no-install-recommends "${suite[@]}" qemu-system-x86 qemu-utils >/dev/null
  major=$(qemu_major)
  [ "${major:-0}" -ge 8 ] || die "QEMU ${major:-none} has no igb NIC; the lab's VMs need QEMU 8 or later"
}

setup_venv() {
  local stamp want
  want=$(cat "$REPO/requirements.txt" "$REPO/tests/requirements.txt" "$REPO/tests/constraints.txt" | sha256sum | cut -c1-16)
  stamp=$VENV/.roce-fabric-stamp
  if [ -x "$PY" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
    return 0
  fi
  log "venv: creating $VENV"
  rm -rf "$VENV"
  python3 -m venv "$VENV"
  pip_quiet install -q --disable-pip-version-check -r "$REPO/tests/requirements.txt" -c "$REPO/tests/constraints.txt"
  echo "$want" > "$stamp"
}

setup_collections() {
  # Dependency collections, extracted once per 'ansible' release into the cache.
  if [ ! -f "$DEPS_ROOT/.complete" ]; then
    log "collections: extracting ${DEP_COLLECTIONS[*]} from ansible==$ANSIBLE_PKG_VERSION"
    local wheels=$CACHE/wheels
    mkdir -p "$wheels"
    ls "$wheels"/ansible-"$ANSIBLE_PKG_VERSION"-*.whl >/dev/null 2>&1 ||
      pip_quiet download -q --disable-pip-version-check --no-deps -d "$wheels" "ansible==$ANSIBLE_PKG_VERSION"
    rm -rf "$DEPS_ROOT.tmp" && mkdir -p "$DEPS_ROOT.tmp"
    "$PY" - "$wheels"/ansible-"$ANSIBLE_PKG_VERSION"-*.whl "$DEPS_ROOT.tmp" "${DEP_COLLECTIONS[@]}" <<'EOF'
import sys
import zipfile

wheel, dest, wanted = sys.argv[1], sys.argv[2], sys.argv[3:]
prefixes = tuple("ansible_collections/%s/" % name for name in wanted)
with zipfile.ZipFile(wheel) as archive:
    members = [m for m in archive.namelist() if m.startswith(prefixes)]
    archive.extractall(dest, members)
missing = [name for name in wanted if not any(m.startswith("ansible_collections/%s/" % name) for m in members)]
if missing:
    sys.exit("not in the wheel: %s" % ", ".join(missing))
EOF
    rm -rf "$DEPS_ROOT" && mv "$DEPS_ROOT.tmp" "$DEPS_ROOT" && touch "$DEPS_ROOT/.complete"
  fi
  # This checkout, seen by Ansible as roce.fabric (Ansible follows the link; ansible-test gets a copy).
  mkdir -p "$COLL_ROOT/ansible_collections/roce"
  ln -sfn "$REPO" "$COLL_ROOT/ansible_collections/roce/fabric"
}

# ansible-test bootstraps pip in its virtual environments by downloading get-pip for the pip version it pins; point
# it at the offline stand-in instead. Argument: the python of the ansible-test to prepare (default the project's).
setup_ansible_test() {
  local python=${1:-$PY} version target
  version=$("$python" -c 'import ansible_test, os, re; p = os.path.join(os.path.dirname(ansible_test.__file__), "_internal", "python_requirements.py"); print(re.search(r"pip=.([0-9.]+).", open(p).read()).group(1))')
  target=$HOME/.ansible/test/cache/get_pip_${version//./_}.py
  mkdir -p "$(dirname "$target")"
  cmp -s "$REPO/tests/utils/get_pip_offline.py" "$target" 2>/dev/null || cp "$REPO/tests/utils/get_pip_offline.py" "$target"
}

export_env() {
  export PATH="$VENV/bin:$PATH"
  export ANSIBLE_COLLECTIONS_PATH="$COLL_ROOT:$DEPS_ROOT"
  export ANSIBLE_COLLECTIONS_SCAN_SYS_PATH=false
  export ANSIBLE_ROLES_PATH="$REPO/roles"
  export ANSIBLE_FORCE_COLOR=${ANSIBLE_FORCE_COLOR:-0}
  export ANSIBLE_NOCOLOR=${ANSIBLE_NOCOLOR:-1}
  export ANSIBLE_HOST_KEY_CHECKING=false
  export ANSIBLE_RETRY_FILES_ENABLED=false
  export ANSIBLE_PYTHON_INTERPRETER=auto_silent
  export ROCE_LAB_DIR=${ROCE_LAB_DIR:-$REPO/.lab}
  ROCE_KUBE_APISERVER=${ROCE_KUBE_APISERVER:-$(kube_apiserver_dir)/kube-apiserver}
  export ROCE_KUBE_APISERVER
  export PYTHONDONTWRITEBYTECODE=1
}

setup_vcsim() {
  # Cached under $CACHE/vcsim/<recipe hash>/ (locked, built aside and renamed); a no-op when cached.
  ROCE_FABRIC_CACHE=$CACHE "$PY" "$REPO/lab/esxi/peer_vcsim.py" build >/dev/null
}

kube_apiserver_dir() { echo "$CACHE/kube-apiserver/$(sha256sum "$REPO/lab/k8s/build_kube_apiserver.sh" | cut -c1-16)"; }

# kube-apiserver for the lab's kube_apiserver peer: built once per recipe into the cache (about 5 min cold),
# under a lock so parallel setups wait for one build, and renamed into place only when complete.
setup_kube_apiserver() {
  local recipe=$REPO/lab/k8s/build_kube_apiserver.sh dir
  dir=$(kube_apiserver_dir)
  export ROCE_KUBE_APISERVER=$dir/kube-apiserver
  [ -x "$ROCE_KUBE_APISERVER" ] && return 0
  mkdir -p "$CACHE/kube-apiserver"
  (
    flock 9
    [ -x "$ROCE_KUBE_APISERVER" ] && exit 0
    log "kube-apiserver: building from Debian's kubernetes source package into $dir (about 5 min)"
    local t0=$SECONDS
    nice -n 10 "$recipe" "$dir"
    log "kube-apiserver: built in $((SECONDS - t0)) s"
  ) 9>"$CACHE/kube-apiserver/.lock"
}

# What unit, sanity, lint and build need from Debian; nothing that needs root once they are there.
LIGHT_APT_PACKAGES="rsync git shellcheck openssh-client"

setup_light_apt() {
  local missing=() pkg
  for pkg in $LIGHT_APT_PACKAGES; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  [ "$(id -u)" = 0 ] || die "install these Debian packages first (as root: apt-get install ${missing[*]})"
  log "apt: installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive "${APT_GET[@]}" update
  DEBIAN_FRONTEND=noninteractive "${APT_GET[@]}" install -y --no-install-recommends "${missing[@]}" >/dev/null
}

# The tiers that need no lab: no root, no QEMU, no vcsim or kube-apiserver build.
do_setup_light() {
  local t0=$SECONDS
  setup_light_apt
  setup_venv
  setup_collections
  setup_ansible_test "$PY"
  export_env
  log "setup (no lab) done in $((SECONDS - t0)) s"
}

do_setup() {
  local t0=$SECONDS
  setup_apt
  setup_vm_tools
  setup_venv
  setup_collections
  setup_ansible_test "$PY"
  setup_vcsim
  setup_kube_apiserver
  export_env
  log "setup done in $((SECONDS - t0)) s"
}

# 'all': everything but the two Go builds (vcsim, kube-apiserver), which start_builds runs beside the first tiers.
do_setup_lanes() {
  local t0=$SECONDS
  setup_apt
  setup_vm_tools
  setup_venv
  setup_collections
  setup_ansible_test "$PY"
  export_env
  log "setup done in $((SECONDS - t0)) s (vcsim and kube-apiserver: built beside the first tiers)"
}

# The Go builds of vcsim and kube-apiserver (5-10 minutes cold on 2 cores, nothing when cached), in the background at
# low priority: the VM lane, which sets the suite's length, does not wait for them, and the foreground lane's tiers
# that need them (esxi, k8s and what follows) wait in wait_builds. Output printed when waited for.
# The builds hold BUILDS_LOCK until they end, taken before they start: the VM lane, which runs in a process of its own
# (it cannot wait for this one's child), waits on the lock before a tier that needs them (builds_ready).
BUILDS_PID="" BUILDS_LOG="" BUILDS_LOCK=""
start_builds() {
  BUILDS_LOG=$(mktemp /tmp/roce-builds.XXXXXX)
  BUILDS_LOCK=$BUILDS_LOG.lock
  exec 8>"$BUILDS_LOCK"
  flock 8
  (
    renice -n 10 -p "$BASHPID" >/dev/null
    t=$SECONDS
    setup_vcsim
    setup_kube_apiserver
    log "builds: vcsim and kube-apiserver ready after $((SECONDS - t)) s"
  ) >"$BUILDS_LOG" 2>&1 &
  BUILDS_PID=$!
  # The build keeps the lock through its inherited descriptor; this shell lets go of its own.
  exec 8>&-
}
# In another process than start_builds': wait until the builds ended (their success is wait_builds' to report).
builds_ready() {
  [ -n "$BUILDS_LOCK" ] || return 0
  flock "$BUILDS_LOCK" true
}
wait_builds() {
  [ -n "$BUILDS_PID" ] || return 0
  local rc=0
  wait "$BUILDS_PID" || rc=$?
  BUILDS_PID=""
  cat "$BUILDS_LOG" >&2
  rm -f "$BUILDS_LOG" "$BUILDS_LOCK"
  [ $rc = 0 ] || { printf 'error: the vcsim or kube-apiserver build failed (rc=%s)\n' "$rc" >&2; return 1; }
}
# The peer tiers that need neither vcsim nor kube-apiserver (they run before wait_builds).
NEEDS_NO_BUILD=" firmware qos onyx nvue image rdma validate "

# A copy of the collection under ansible_collections/roce/fabric, as ansible-test requires (argument: a folder of its
# own under the checkout's cache, default test).
sync_test_tree() {
  local dest=$COLL_ROOT/${1:-test}/ansible_collections/roce/fabric
  mkdir -p "$dest"
  rsync -a --delete \
    --exclude .git/ --exclude .venv/ --exclude .lab/ --exclude tests/output/ --exclude .ansible/ \
    --exclude '__pycache__/' --exclude '.pytest_cache/' --exclude '*.tar.gz' --exclude .cache/ \
    --exclude changelogs/.plugin-cache.yaml \
    "$REPO/" "$dest/"
  # ansible-test only reads tracked files when it sees a git repository; a copy has none, so it reads them all.
  echo "$dest"
}

lab() { "$PY" "$REPO/lab/labctl.py" --inventory "$LAB_INVENTORY/hosts.yml" "$@"; }
