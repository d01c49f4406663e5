# roce.fabric test runner: the tiers without a lab (unit, sanity, lint, build, compat), molecule, clients and the lab run. Sourced by tests/run, which defines REPO, CACHE, VENV, PY, the
# versions and log/die; not run on its own.
# shellcheck shell=bash disable=SC2034  # variables used by the other parts of the runner

tier_unit() {
  log "unit: ansible-test units"
  local tree
  tree=$(sync_test_tree)
  (cd "$tree" && ansible-test units --python "$(python3_version)" --requirements --color no)
  log "unit: lab simulators"
  (cd "$REPO" && "$PY" -m pytest -q -p no:cacheprovider lab)
}

python3_version() { "$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])'; }

tier_sanity() {
  log "sanity: ansible-test sanity (no ignore file)"
  [ ! -e "$REPO/tests/sanity" ] || ! ls "$REPO"/tests/sanity/ignore-*.txt >/dev/null 2>&1 || die "tests/sanity/ignore-*.txt must not exist"
  local tree
  tree=$(sync_test_tree)
  (cd "$tree" && ansible-test sanity --python "$(python3_version)" --color no --requirements)
}

tier_lint() {
  log "lint: yamllint"
  (cd "$REPO" && yamllint -s .)
  log "lint: ansible-lint (production profile)"
  (cd "$REPO" && ansible-lint --offline -q)
  log "lint: shellcheck of the runner (tests/run with the parts it sources, .ci/run)"
  (cd "$REPO" && shellcheck -x tests/run .ci/run)
  log "lint: antsibull-changelog"
  (cd "$REPO" && antsibull-changelog lint)
  # Jinja renders, Python decides: no statement blocks in the roles' tasks and defaults (templates/ keep theirs).
  log "lint: no {% in roles/*/tasks or roles/*/defaults"
  local blocks
  blocks=$(cd "$REPO" && { grep -n '{%' roles/*/tasks/*.yml roles/*/defaults/*.yml || true; })
  [[ -z $blocks ]] || die "Jinja statements in role tasks or defaults (move the decision into Python, a filter or module):
$blocks"
  log "lint: syntax check of playbooks/roce.yml with every shipped inventory"
  local inv
  for inv in "$REPO"/inventories/lab "$REPO"/inventories/examples/*/; do
    (cd "$REPO" && ansible-playbook --syntax-check -i "$inv" playbooks/roce.yml >/dev/null) || die "syntax check failed with $inv"
  done
  log "lint: every shipped inventory reaches the stages of roce.yml it should (tests/inventory); no role set_fact computes (tests/lint)"
  (cd "$REPO" && "$PY" -m pytest -q -p no:cacheprovider tests/inventory tests/lint)
}

ansible_wheel() { ls "$CACHE"/wheels/ansible-"$ANSIBLE_PKG_VERSION"-*.whl; }

# The user's path (tests/install): the collection built, published on a Galaxy server on loopback beside every
# collection of the 'ansible' wheel, installed by name into an empty collections path with only galaxy.yml's
# dependencies, then parsed, resolved and documented from that copy alone; the tarball's contents; the execution
# environment's context. ROCE_ANSIBLE_BIN: another ansible-core's bin folder (tier_compat).
tier_build() {
  log "build: the tarball installed from a Galaxy server as a user does (tests/install)"
  (cd "$REPO" && ROCE_ANSIBLE_WHEEL=$(ansible_wheel) "$PY" -m pytest -q -p no:cacheprovider tests/install)
}

# The floor and the newest ansible-core: the floor is meta/runtime.yml's requires_ansible, with requirements.txt's
# lower bounds as exact versions; the newest runs on Python 3.12 or later, which Debian 12 does not ship (taken where
# the machine has one, else said). Each: its own virtual environment in the cache, ansible-test units and sanity on a
# copy of the collection, and tests/install with that ansible-core.
COMPAT_NEWEST_CORE=2.21.5
compat_floor() { sed -n "s/^requires_ansible: *['\"]>=\([0-9.]*\)['\"].*/\1/p" "$REPO/meta/runtime.yml"; }
compat_newest_python() {
  local candidate
  for candidate in python3.14 python3.13 python3.12 "$HOME"/.pyenv/versions/3.1[2-9]*/bin/python3; do
    if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c 'import sys, venv; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
      command -v "$candidate"
      return 0
    fi
  done
  return 1
}
# compat_venv NAME PYTHON CORE [lowest]: prints the venv's folder, made once per recipe.
compat_venv() {
  local name=$1 python=$2 core=$3 lowest=${4:-} key dir
  key=$( (echo "$python $core $lowest"; [ -z "$lowest" ] || cat "$REPO/requirements.txt") | sha256sum | cut -c1-12)
  dir=$CACHE/venv-compat-$name-$key
  if [ ! -f "$dir/.complete" ]; then
    log "compat: creating $dir (ansible-core $core${lowest:+, requirements.txt at its lower bounds})"
    rm -rf "$dir"
    "$python" -m venv "$dir"
    local pins=("ansible-core==$core")
    if [ -n "$lowest" ]; then
      # kubernetes>=24.2.0 -> kubernetes==24.2.0: the oldest releases the collection claims to work with.
      mapfile -t -O 1 pins < <(sed -n 's/^\([A-Za-z0-9_.-]*\)>=\([0-9][0-9A-Za-z.]*\).*/\1==\2/p' "$REPO/requirements.txt")
    fi
    "$dir/bin/pip" install -q --disable-pip-version-check "${pins[@]}" pyyaml \
      2> >(grep -v 'is ignored: it is neither a file nor a directory' >&2) >&2
    touch "$dir/.complete"
  fi
  echo "$dir"
}
compat_run() {
  local name=$1 venv=$2 version tree t=$SECONDS
  version=$("$venv/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  setup_ansible_test "$venv/bin/python"
  tree=$(sync_test_tree "compat-$name")
  log "compat: $name: ansible-core $("$venv/bin/python" -c 'import ansible.release; print(ansible.release.__version__)') on Python $version: units"
  (cd "$tree" && PATH="$venv/bin:$PATH" ansible-test units --python "$version" --requirements --color no)
  log "compat: $name: sanity"
  (cd "$tree" && PATH="$venv/bin:$PATH" ansible-test sanity --python "$version" --requirements --color no)
  log "compat: $name: the Galaxy user's install (tests/install)"
  (cd "$REPO" && ROCE_ANSIBLE_BIN="$venv/bin" ROCE_ANSIBLE_WHEEL=$(ansible_wheel) "$PY" -m pytest -q -p no:cacheprovider tests/install)
  log "compat: $name passed in $((SECONDS - t)) s"
}
tier_compat() {
  local floor newest_python venv
  floor=$(compat_floor)
  [ -n "$floor" ] || die "no '>=X.Y.Z' requires_ansible in meta/runtime.yml"
  venv=$(compat_venv floor python3 "$floor" lowest)
  compat_run floor "$venv"
  if newest_python=$(compat_newest_python); then
    venv=$(compat_venv newest "$newest_python" "$COMPAT_NEWEST_CORE")
    compat_run newest "$venv"
  else
    log "compat: NOT TESTED: ansible-core $COMPAT_NEWEST_CORE needs Python 3.12 or later, which this machine lacks"
  fi
}

# Scenarios that run on the lab VMs: with every scenario, they run in the background beside the others (each
# scenario starts and stops only the peers it names), under the VMs' lock; ROCE_PEER_PARALLEL=0 runs all in turn.
MOLECULE_BESIDE="rdma"

# molecule_scenarios beside|others: the scenarios on the VMs, or the others.
molecule_scenarios() {
  local s
  for s in $(cd "$REPO/molecule" && for f in */molecule.yml; do dirname "$f"; done); do
    if [[ " $MOLECULE_BESIDE " == *" $s "* ]]; then
      [ "$1" = beside ] && echo "$s"
    else
      [ "$1" = others ] && echo "$s"
    fi
  done
  return 0
}

run_scenarios() { local s; for s in "$@"; do run_scenario "$s" || return $?; done; }
run_scenario() {
  local t=$SECONDS rc=0
  log "molecule: $1"
  if [[ " $MOLECULE_BESIDE " == *" $1 "* ]]; then
    (cd "$REPO" && run_recorded "molecule: $1" flock /tmp/roce-vm.lock molecule test -s "$1") || rc=$?
  else
    (cd "$REPO" && run_recorded "molecule: $1" molecule test -s "$1") || rc=$?
  fi
  log "molecule: $1 finished with rc=$rc in $((SECONDS - t)) s"
  return $rc
}

tier_molecule() {
  need_root
  local scenarios=${1:-} rc=0 beside others
  if [ -n "$scenarios" ]; then
    # shellcheck disable=SC2086  # a list of scenario names
    run_scenarios $scenarios
    return
  fi
  beside=$(molecule_scenarios beside)
  others=$(molecule_scenarios others)
  if [ "${ROCE_PEER_PARALLEL:-1}" != 1 ]; then
    # shellcheck disable=SC2086  # lists of scenario names
    run_scenarios $others $beside
    return
  fi
  if [ -n "$beside" ]; then
    log "molecule: $beside in the background (output at its end)"
    # shellcheck disable=SC2086  # a list of scenario names
    start_background run_scenarios $beside
  fi
  # shellcheck disable=SC2086  # a list of scenario names
  run_scenarios $others || rc=$?
  finish_background || return $?
  return $rc
}

# The third-party client tier's own virtual environment: the 'ansible' 7 package, the last one that bundles
# mellanox.onyx, with the ansible-core it was released with, kept apart from the project's venv.
CLIENTS_ANSIBLE_VERSION=7.7.0
CLIENTS_VENV=$CACHE/venv-clients-ansible-$CLIENTS_ANSIBLE_VERSION

setup_clients() {
  if [ ! -x "$CLIENTS_VENV/bin/ansible-playbook" ] || [ ! -f "$CLIENTS_VENV/.complete" ]; then
    log "clients: creating $CLIENTS_VENV (ansible==$CLIENTS_ANSIBLE_VERSION, paramiko)"
    rm -rf "$CLIENTS_VENV"
    python3 -m venv "$CLIENTS_VENV"
    "$CLIENTS_VENV/bin/pip" install -q --disable-pip-version-check "ansible==$CLIENTS_ANSIBLE_VERSION" "paramiko>=3,<4" \
      2> >(grep -v 'is ignored: it is neither a file nor a directory' >&2)
    touch "$CLIENTS_VENV/.complete"
  fi
  export ROCE_CLIENTS_VENV=$CLIENTS_VENV
}

tier_clients() {
  need_root
  setup_clients
  log "clients: mellanox.onyx (ansible $CLIENTS_ANSIBLE_VERSION) against the Onyx simulator, community.vmware against vcsim"
  (cd "$REPO" && "$PY" -m pytest -q -p no:cacheprovider tests/clients)
}


run_lab() {
  need_root
  local t0=$SECONDS
  log "lab: starting the peers of inventories/lab"
  lab up
  local rc=0
  # The lab's rolling batches, as an operator gives them (-e, read by the plays' serial): half of its four GPU nodes
  # and four switches at a time, one of its two ESXi hosts; never all at once. Arguments after 'lab' come later and win.
  (cd "$REPO" && ansible-playbook -i "$LAB_INVENTORY" -e roce_reboot_serial=50% -e roce_switch_serial=50% \
    playbooks/roce.yml "$@") || rc=$?
  if [ "${ROCE_LAB_KEEP:-0}" != 1 ]; then
    lab down
  else
    log "lab: left running (ROCE_LAB_KEEP=1); stop it with: tests/run lab-down"
  fi
  log "lab: playbooks/roce.yml finished with rc=$rc in $((SECONDS - t0)) s"
  return $rc
}
