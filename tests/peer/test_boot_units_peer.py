"""roce.fabric.boot_units against a lab VM (QEMU, Debian's kernel, systemd 252): check mode, apply, idempotence with no
command, a restart for a changed helper, every refusal with the VM's files and units unchanged, and removal. Every
state is read from the VM over SSH, outside the module. The roles that use the module (Soft-RoCE, NIC QoS, SR-IOV,
NVMe scratch, RDMA exporter) are tested through their own tiers and molecule/rdma."""

import json
import os
import subprocess

import pytest

from conftest import INVENTORY, LAB, REPO, run_module

VM = "node1"
HELPER = "/usr/local/sbin/roce-bu-test"
# Its parent is not there either: the module makes it (0755) before the directory it is asked for (0750).
TOP = "/etc/roce-bu-test"
DATA = TOP + "/conf"
COUNT = "/run/roce-bu-test.count"
RUNS = "roce-bu-test-run.service"
IDLE = "roce-bu-test-idle.service"
UNIT = """[Unit]
Description=roce.fabric boot_units test

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/bin/python3 %s %s/settings.json

[Install]
WantedBy=multi-user.target
""" % (HELPER, DATA)
PROGRAM = ("import sys\nwith open(%r, 'a') as handle:\n    handle.write(open(sys.argv[1]).read().strip() + '\\n')\n" % COUNT)


def vm(command, check=True):
    proc = LAB.exec(VM, [command])
    if check and proc.returncode != 0:
        raise AssertionError("%s: rc=%d %s %s" % (command, proc.returncode, proc.stdout, proc.stderr))
    return proc.stdout


def args(program=PROGRAM, settings='{"vfs": 2}\n'):
    return dict(directories=[dict(path=DATA, mode="0750")],
                files=[dict(path=HELPER, content=program, mode="0755"),
                       dict(path=DATA + "/settings.json", content=settings)],
                units=[dict(name=RUNS, content=UNIT, started=True, restart_on_change=True),
                       dict(name=IDLE, content=UNIT.replace("boot_units test", "idle"))])


def module(arguments, check=False, diff=False):
    return run_module(INVENTORY, VM, "roce.fabric.boot_units", arguments, check=check, diff=diff)


def vm_state():
    """The test's files (kind, mode, owner, link target, checksum), the units' states and the helper's runs."""
    return vm("for p in %s %s %s %s/settings.json /etc/systemd/system/%s /etc/systemd/system/%s "
              "/etc/systemd/system/multi-user.target.wants/%s /etc/systemd/system/multi-user.target.wants/%s /tmp/bu-target; "
              "do stat -c '%%n %%F %%a %%U %%N' $p 2>/dev/null || echo \"$p absent\"; test -f $p && md5sum $p; done; "
              "systemctl show --property=Id,ActiveState,UnitFileState %s %s; cat %s 2>/dev/null; true"
              % (TOP, DATA, HELPER, DATA, RUNS, IDLE, RUNS, IDLE, RUNS, IDLE, COUNT))


def clean():
    vm("systemctl disable --now %s %s 2>/dev/null; rm -rf %s %s %s /tmp/bu-target /etc/systemd/system/%s "
       "/etc/systemd/system/%s; systemctl daemon-reload" % (RUNS, IDLE, TOP, HELPER, COUNT, RUNS, IDLE), check=False)


@pytest.fixture(scope="module")
def node(vms):
    clean()
    yield VM
    clean()


def test_check_apply_idempotent_and_restart_on_change(node):
    before = vm_state()
    checked = module(args(), check=True, diff=True)
    assert checked["changed"] is True and checked.get("failed") is not True, checked
    assert vm_state() == before, "check mode changed the VM"
    assert checked["started"] == [RUNS]
    assert any(d.get("after_header") == HELPER for d in checked["diff"] if isinstance(d, dict)), checked["diff"]

    done = module(args())
    assert done["changed"] is True and done["started"] == [RUNS] and done["daemon_reload"] is True, done
    assert done["commands"][-2:] == ["/usr/bin/systemctl enable -- %s %s" % (RUNS, IDLE), "/usr/bin/systemctl start -- %s" % RUNS] \
        or done["commands"][-2:] == ["/bin/systemctl enable -- %s %s" % (RUNS, IDLE), "/bin/systemctl start -- %s" % RUNS], done["commands"]
    state = vm_state()
    assert "%s directory 750 root" % DATA in state and "%s regular file 755 root" % HELPER in state, state
    assert "%s directory 755 root" % TOP in state and done["commands"][0] == "mkdir -m 0755 %s" % TOP, done["commands"]
    assert "%s/settings.json regular file 644 root" % DATA in state
    assert vm("systemctl is-enabled %s %s" % (RUNS, IDLE)).split() == ["enabled", "enabled"]
    assert vm("systemctl is-active %s" % RUNS).strip() == "active"
    assert vm("systemctl is-active %s || true" % IDLE).strip() == "inactive"
    assert vm("cat %s" % COUNT).splitlines() == ['{"vfs": 2}']
    assert vm("cat %s" % HELPER) == PROGRAM

    again = module(args())
    assert again["changed"] is False and again["commands"] == [] and again["started"] == [], again
    assert vm_state() == state

    # New settings: written, and the running unit restarted (its helper ran again); the idle one left alone.
    changed = module(args(settings='{"vfs": 4}\n'), diff=True)
    assert changed["changed"] is True and changed["restarted"] == [RUNS] and changed["daemon_reload"] is False, changed
    assert changed["files"] == [DATA + "/settings.json"]
    assert vm("cat %s" % COUNT).splitlines() == ['{"vfs": 2}', '{"vfs": 4}']

    # Mode and owner drift is put back without rewriting the content.
    vm("chmod 0700 %s && chown nobody %s/settings.json" % (HELPER, DATA))
    fixed = module(args(settings='{"vfs": 4}\n'))
    assert fixed["changed"] is True and fixed["commands"][:2] == ["chmod 0755 %s" % HELPER, "chown root:root %s/settings.json" % DATA], fixed
    assert "%s regular file 755 root" % HELPER in vm_state()


def test_bad_input_is_refused_and_changes_nothing(node, tmp_path):
    module(args())
    # What the module must not follow or replace: a link at the helper's path and a directory at a unit's.
    vm("mv %s %s.real && ln -s /tmp/bu-target %s && echo keep > /tmp/bu-target" % (HELPER, HELPER, HELPER))
    before = vm_state()
    cases = [
        (dict(files=[dict(path=HELPER, content="pwned\n", mode="0755")]), "is a symbolic link, not a regular file"),
        (dict(files=[dict(path="/etc/../tmp/bu-x", content="x")]), "absolute, normalised path"),
        (dict(files=[dict(path="/tmp/bu-x", content="x", mode="0666")]), "lets every user write"),
        (dict(units=[dict(name="x.service\nExecStart=/bin/touch /tmp/bu-pwned", content=UNIT)]), "unit name"),
        (dict(units=[dict(name="../../../tmp/bu-x.service", content=UNIT)]), "unit name"),
        (dict(files=[dict(path="/sys/kernel/mm/ksm/run", content="1")]), "under /sys"),
        (dict(directories=[dict(path=HELPER)]), "not a directory"),
        (dict(remove_files=[DATA]), "only files and links are removed"),
        (dict(files=[dict(path="/tmp/bu-x", content="x")], units=[dict(name=RUNS, content="")], unit_dir="/tmp/bu dir"),
         "absolute, normalised path"),
    ]
    play = [dict(hosts=VM, gather_facts=False, tasks=[
        dict(name="case %d" % i, ignore_errors=True, **{"roce.fabric.boot_units": arguments})
        for i, (arguments, _message) in enumerate(cases)])]
    path = tmp_path / "bad.yml"
    path.write_text(json.dumps(play))
    env = dict(os.environ, ANSIBLE_LOAD_CALLBACK_PLUGINS="1", ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json")
    proc = subprocess.run(["ansible-playbook", "-i", INVENTORY, str(path)], capture_output=True, text=True, env=env,
                          cwd=REPO, check=False)
    results = [task["hosts"][VM] for task in json.loads(proc.stdout)["plays"][0]["tasks"]]
    assert len(results) == len(cases), proc.stdout[-3000:]
    for (arguments, message), result in zip(cases, results):
        assert result.get("failed") is True and message in result["msg"], (arguments, result)
        assert "nothing was changed" in result["msg"] and result.get("commands") == [], result
    assert vm_state() == before
    assert vm("cat /tmp/bu-target") == "keep\n"
    assert vm("ls /tmp/bu-x /tmp/bu-pwned 2>/dev/null || true").strip() == ""
    vm("rm %s && mv %s.real %s" % (HELPER, HELPER, HELPER))


def test_removal_stops_disables_and_a_second_removal_changes_nothing(node):
    module(args())
    assert vm("systemctl is-active %s" % RUNS).strip() == "active"
    removal = dict(remove_units=[RUNS, IDLE], remove_files=[HELPER, DATA + "/settings.json"])
    checked = module(removal, check=True)
    assert checked["changed"] is True and checked["stopped"] == [RUNS]
    assert vm("systemctl is-active %s" % RUNS).strip() == "active" and vm("test -f %s && echo yes" % HELPER).strip() == "yes"
    removed = module(removal)
    assert removed["changed"] is True and removed["stopped"] == [RUNS] and removed["daemon_reload"] is True, removed
    state = vm_state()
    for path in (HELPER, "/etc/systemd/system/" + RUNS, "/etc/systemd/system/multi-user.target.wants/" + RUNS,
                 "/etc/systemd/system/" + IDLE, DATA + "/settings.json"):
        assert "%s absent" % path in state, state
    assert vm("systemctl is-active %s || true" % RUNS).strip() == "inactive"
    assert "LoadState=not-found" in vm("systemctl show --property=LoadState %s" % RUNS)
    again = module(removal)
    assert again["changed"] is False and again["commands"] == [], again
