# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What a Galaxy user gets: the built tarball installed with only the dependencies galaxy.yml declares.

The collection is built from this checkout and published on a Galaxy server on loopback (``galaxy_stub.py``)
beside every collection of the ``ansible`` package's wheel; the README's ``requirements.yml`` installs it by name
into an empty collections path, ansible-core's resolver taking only what ``galaxy.yml`` declares; nothing the test
environment has installed is visible. Then, on that installed copy alone:

- the collections installed are roce.fabric and the closure of galaxy.yml's ``dependencies``;
- every playbook passes ``--syntax-check`` and ``--list-tasks``;
- a play that imports every task file of every role (``import_role`` with ``tasks_from``, which loads
  the file and resolves each task's module when the play is parsed, where a role's ``include_tasks``
  would only at run time) passes ``--syntax-check``;
- every ``namespace.collection.name`` the roles, playbooks and templates use resolves to a module,
  action, filter, test, lookup or callback of an installed collection, and every
  ``ansible_collections.<ns>.<name>`` import of the plugins names an installed collection;
- ``ansible-doc`` documents every module;
- the tarball holds what users run and none of what only contributors need;
- docs/execution-environment.md's definition gives an ansible-builder context whose image would install the
  collection's ``requirements.txt`` and ``bindep.txt``.

Needs ``ROCE_ANSIBLE_WHEEL`` (the ``ansible`` package's wheel; ``tests/run build`` sets it). Run alone:
``tests/run build``. ``ROCE_ANSIBLE_BIN`` runs another ansible-core (a folder with ansible-galaxy and
ansible-playbook), as the compat tier does.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile

import pytest
import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from galaxy_stub import GalaxyStub, dependency_closure  # noqa: E402  pylint: disable=wrong-import-position

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WHEEL = os.environ.get("ROCE_ANSIBLE_WHEEL", "")
BIN = os.environ.get("ROCE_ANSIBLE_BIN") or os.path.dirname(sys.executable)

# What a user runs, by path in the tarball (every module and role is checked by name below).
REQUIRED = ["README.md", "LICENSE", "CHANGELOG.rst", "changelogs/changelog.yaml", "meta/runtime.yml",
            "meta/execution-environment.yml", "requirements.txt", "bindep.txt", "docs/README.md",
            "playbooks/roce.yml", "inventories/examples/small_site/hosts.yml"]
# What only contributors need: the lab, its inventory, the test suite, molecule, the contributors' docs,
# lint settings and unreleased changelog fragments.
FORBIDDEN = re.compile(r"^(lab/|inventories/lab/|tests/|molecule/|docs/contributing/|changelogs/fragments/|\.ci/|"
                       r"\.ansible-lint$|\.yamllint$|\.gitignore$|.*__pycache__/|.*\.pyc$)")

pytestmark = pytest.mark.skipif(not os.path.isfile(WHEEL), reason="ROCE_ANSIBLE_WHEEL is not set (run: tests/run build)")


def clean_env(home, collections_path):
    """The environment of a user's shell: no collections but the install path, no settings of the test suite."""
    env = {"PATH": BIN + os.pathsep + "/usr/bin:/bin", "HOME": home, "LC_ALL": "C.UTF-8",
           "ANSIBLE_COLLECTIONS_PATH": collections_path, "ANSIBLE_COLLECTIONS_SCAN_SYS_PATH": "false",
           "ANSIBLE_NOCOLOR": "1", "ANSIBLE_DEPRECATION_WARNINGS": "false", "ANSIBLE_LOCAL_TEMP": os.path.join(home, "tmp")}
    return env


def run(argv, env, cwd):
    proc = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, check=False, timeout=600)
    tail = (proc.stdout[-4000:], proc.stderr[-4000:])
    assert proc.returncode == 0, "%s failed (rc %s):\n%s\n%s" % ((" ".join(argv), proc.returncode) + tail)
    return proc.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(tarball, installed collection path, environment, galaxy stub) after the user's install."""
    top = tmp_path_factory.mktemp("galaxy")
    home = top / "home"
    (home / "tmp").mkdir(parents=True)
    out = top / "build"
    run([os.path.join(BIN, "ansible-galaxy"), "collection", "build", "--output-path", str(out), REPO],
        clean_env(str(home), str(top / "none")), str(top))
    tarball = glob.glob(str(out / "roce-fabric-*.tar.gz"))[0]
    path = top / "collections"
    env = clean_env(str(home), str(path))
    requirements = top / "requirements.yml"
    requirements.write_text(readme_block(r"collections:\n  - name: roce\.fabric"))
    galaxy = GalaxyStub(WHEEL)
    galaxy.publish(tarball)
    with galaxy:
        # The README's requirements.yml, by name from "Galaxy", as a user installs it.
        run([os.path.join(BIN, "ansible-galaxy"), "collection", "install", "-r", str(requirements), "-p", str(path),
             "-s", galaxy.url], env, str(top))
        yield {"tarball": tarball, "path": str(path), "env": env, "galaxy": galaxy, "top": str(top),
               "root": str(path / "ansible_collections" / "roce" / "fabric")}


def readme_block(start, page="README.md"):
    """The fenced yaml block of a page that starts with ``start`` (a regular expression)."""
    with open(os.path.join(REPO, page)) as handle:
        text = handle.read()
    blocks = [b for b in re.findall(r"```yaml\n(.*?)```", text, re.S) if re.match(start, b)]
    assert len(blocks) == 1, "%s: one yaml block starting with %s" % (page, start)
    return blocks[0]


def galaxy_yml():
    with open(os.path.join(REPO, "galaxy.yml")) as handle:
        return yaml.safe_load(handle)


def installed_collections(path):
    found = set()
    for manifest in glob.glob(os.path.join(path, "ansible_collections", "*", "*", "MANIFEST.json")):
        with open(manifest) as handle:
            info = json.load(handle)["collection_info"]
        found.add("%s.%s" % (info["namespace"], info["name"]))
    return found


def test_only_the_declared_dependencies_are_installed(installed):
    declared = galaxy_yml().get("dependencies") or {}
    expected = {"roce.fabric"} | dependency_closure(installed["galaxy"].index, declared)
    assert installed_collections(installed["path"]) == expected
    assert installed["galaxy"].downloaded() == expected


def test_an_execution_environment_gets_the_collections_requirements(installed, tmp_path):
    """docs/execution-environment.md's definition: ansible-builder makes the context; its galaxy stage (the
    requirements it wrote, from the Galaxy server) and its builder stage (the context's own introspect script, which
    reads meta/execution-environment.yml) are replayed here, and what the image would pip-install and install from
    bindep holds the collection's requirements.txt and bindep.txt."""
    definition = tmp_path / "execution-environment.yml"
    definition.write_text(readme_block(r"---\nversion: 3\n", "docs/execution-environment.md"))
    builder = shutil.which("ansible-builder") or os.path.join(os.path.dirname(sys.executable), "ansible-builder")
    run([builder, "create", "-f", str(definition), "--context", str(tmp_path / "ee")], installed["env"], str(tmp_path))
    context = tmp_path / "ee"
    with open(context / "_build" / "requirements.yml") as handle:
        assert yaml.safe_load(handle)["collections"] == [{"name": "roce.fabric", "version": "1.0.0"}]
    assert (context / "Containerfile").read_text().count("introspect") >= 1
    image = tmp_path / "image"
    env = dict(installed["env"], ANSIBLE_GALAXY_DISABLE_GPG_VERIFY="1", ANSIBLE_COLLECTIONS_PATH=str(image))
    run([os.path.join(BIN, "ansible-galaxy"), "collection", "install", "-r", str(context / "_build" / "requirements.yml"),
         "-p", str(image), "-s", installed["galaxy"].url], env, str(tmp_path))
    pip, bindep = tmp_path / "pip.txt", tmp_path / "bindep.txt"
    run([sys.executable, str(context / "_build" / "scripts" / "introspect.py"), "introspect", "--write-pip", str(pip),
         "--write-bindep", str(bindep), str(image)], env, str(tmp_path))
    ours = "  # from collection roce.fabric"
    with open(os.path.join(REPO, "requirements.txt")) as handle:
        wanted = [line.strip() for line in handle if line.strip() and not line.startswith("#")]
    got = [line[:-len(ours)] for line in pip.read_text().splitlines() if line.endswith(ours)]
    assert got == wanted
    with open(os.path.join(REPO, "bindep.txt")) as handle:
        wanted = [line.strip() for line in handle if line.strip() and not line.startswith("#")]
    assert [line[:-len(ours)] for line in bindep.read_text().splitlines() if line.endswith(ours)] == wanted


def tarball_files(tarball):
    with tarfile.open(tarball) as tar:
        return sorted(m.name[2:] if m.name.startswith("./") else m.name for m in tar.getmembers() if m.isfile())


def test_the_tarball_holds_what_users_run_and_nothing_for_contributors(installed):
    files = tarball_files(installed["tarball"])
    assert [f for f in files if FORBIDDEN.match(f)] == []
    missing = [f for f in REQUIRED if f not in files]
    for module in glob.glob(os.path.join(REPO, "plugins", "modules", "*.py")):
        name = "plugins/modules/" + os.path.basename(module)
        if name not in files:
            missing.append(name)
    for role in glob.glob(os.path.join(REPO, "roles", "*", "")):
        for part in ("README.md", "meta/argument_specs.yml", "meta/main.yml"):
            name = "roles/%s/%s" % (os.path.basename(role.rstrip("/")), part)
            if name not in files:
                missing.append(name)
    assert missing == []


def playbooks(root):
    return sorted(glob.glob(os.path.join(root, "playbooks", "*.yml")))


def test_every_playbook_parses_and_lists_its_tasks(installed):
    inventory = os.path.join(installed["root"], "inventories", "examples", "small_site", "hosts.yml")
    books = playbooks(installed["root"])
    assert len(books) >= 10
    playbook = os.path.join(BIN, "ansible-playbook")
    run([playbook, "-i", inventory, "--syntax-check"] + books, installed["env"], installed["top"])
    listed = run([playbook, "-i", inventory, "--list-tasks", "--list-hosts"] + books, installed["env"], installed["top"])
    assert "roce.fabric.roce_switch" in listed and "roce.fabric.validate" in listed
    # The playbooks also run by their collection name, as the README shows.
    run([playbook, "-i", inventory, "--syntax-check", "roce.fabric.roce"], installed["env"], installed["top"])


def every_task_file_play(root):
    tasks = []
    for path in sorted(glob.glob(os.path.join(root, "roles", "*", "tasks", "*.yml"))):
        role = os.path.basename(os.path.dirname(os.path.dirname(path)))
        name = os.path.splitext(os.path.basename(path))[0]
        tasks.append({"name": "%s %s" % (role, name),
                      "ansible.builtin.import_role": {"name": "roce.fabric." + role, "tasks_from": name}})
    return [{"name": "Every task file of every role", "hosts": "localhost", "gather_facts": False, "tasks": tasks}]


def test_every_task_file_of_every_role_loads(installed):
    play = every_task_file_play(installed["root"])
    assert len(play[0]["tasks"]) >= 40
    path = os.path.join(installed["top"], "every_task_file.yml")
    with open(path, "w") as handle:
        yaml.safe_dump(play, handle, sort_keys=False)
    run([os.path.join(BIN, "ansible-playbook"), "--syntax-check", path], installed["env"], installed["top"])


# namespace.collection.name as a task's module, a filter, a test, a lookup, a role or a playbook; the first two
# parts decide whether it names a collection.
FQCN_RE = re.compile(r"(?<![\w.])([a-z_][a-z0-9_]*)\.([a-z_][a-z0-9_]*)\.([a-z_][a-z0-9_]*)(?![\w])")
IMPORT_RE = re.compile(r"ansible_collections\.([a-z_][a-z0-9_]*)\.([a-z_][a-z0-9_]*)")


def strip_comments(text, path):
    """The text without YAML ``#`` comment lines and Jinja ``{# #}`` comments (prose names other things)."""
    text = re.sub(r"\{#.*?#\}", "", text, flags=re.S)
    if path.endswith((".yml", ".yaml")):
        text = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    return text


def references(root, collections):
    """{fqcn: [file, ...]} of every plugin reference in the installed roles, playbooks and templates."""
    found = {}
    for path in glob.glob(os.path.join(root, "roles", "**", "*"), recursive=True) + playbooks(root):
        if not os.path.isfile(path) or not path.endswith((".yml", ".yaml", ".j2")):
            continue
        with open(path) as handle:
            text = strip_comments(handle.read(), path)
        for match in FQCN_RE.finditer(text):
            if "%s.%s" % match.group(1, 2) in collections:
                # module_defaults' group/ns.coll.name is an action group of meta/runtime.yml
                prefix = "group/" if text[max(0, match.start() - 6):match.start()] == "group/" else ""
                found.setdefault(prefix + ".".join(match.groups()), set()).add(os.path.relpath(path, root))
    return found


RESOLVE = r"""
import json, sys
from ansible.plugins.loader import init_plugin_loader
init_plugin_loader()
from ansible.plugins import loader
found = {}
for name in json.loads(sys.stdin.read()):
    kinds = []
    for kind, plugins in (("module", loader.module_loader), ("action", loader.action_loader),
                          ("filter", loader.filter_loader), ("test", loader.test_loader),
                          ("lookup", loader.lookup_loader), ("callback", loader.callback_loader),
                          ("connection", loader.connection_loader), ("become", loader.become_loader)):
        try:
            if kind in ("filter", "test"):
                ok = plugins.get(name) is not None
            else:
                ok = plugins.find_plugin_with_context(name).resolved
        except Exception:
            ok = False
        if ok:
            kinds.append(kind)
    found[name] = kinds
print(json.dumps(found))
"""


def test_every_collection_reference_resolves(installed):
    known = {"%s.%s" % key for key in installed["galaxy"].index} | {"ansible.builtin", "roce.fabric"}
    used = references(installed["root"], known)
    groups = dict((name, files) for name, files in used.items() if name.startswith("group/"))
    for name in groups:
        del used[name]
    for name, files in sorted(groups.items()):
        namespace, collection, group = name[len("group/"):].split(".")
        runtime = os.path.join(installed["path"], "ansible_collections", namespace, collection, "meta", "runtime.yml")
        with open(runtime) as handle:
            assert group in (yaml.safe_load(handle).get("action_groups") or {}), "%s (%s)" % (name, sorted(files))
    assert "roce.fabric.boot_units" in used and "ansible.builtin.command" in used
    python = os.path.join(BIN, "python")
    proc = subprocess.run([python if os.path.exists(python) else sys.executable, "-c", RESOLVE],
                          input=json.dumps(sorted(used)), env=installed["env"], capture_output=True, text=True,
                          check=False, timeout=300)
    assert proc.returncode == 0, proc.stderr
    resolved = json.loads(proc.stdout)
    for name in resolved:
        namespace, collection, short = name.split(".")
        base = os.path.join(installed["path"], "ansible_collections", namespace, collection)
        if os.path.isdir(os.path.join(base, "roles", short)):
            resolved[name].append("role")
        if os.path.isfile(os.path.join(base, "playbooks", short + ".yml")):
            resolved[name].append("playbook")
    unresolved = dict((name, sorted(used[name])) for name, kinds in resolved.items() if not kinds)
    assert unresolved == {}, "not in any installed collection (declare it in galaxy.yml or drop it): %s" % unresolved
    # Python imports of other collections' module_utils and plugins.
    present = installed_collections(installed["path"]) | {"roce.fabric"}
    missing = {}
    for path in glob.glob(os.path.join(installed["root"], "plugins", "**", "*.py"), recursive=True):
        with open(path) as handle:
            for match in IMPORT_RE.finditer(handle.read()):
                if "%s.%s" % match.groups() not in present:
                    missing.setdefault("%s.%s" % match.groups(), []).append(os.path.relpath(path, installed["root"]))
    assert missing == {}


def test_every_module_is_documented(installed):
    modules = sorted("roce.fabric." + os.path.splitext(os.path.basename(p))[0]
                     for p in glob.glob(os.path.join(installed["root"], "plugins", "modules", "*.py")))
    docs = json.loads(run([os.path.join(BIN, "ansible-doc"), "--json"] + modules, installed["env"], installed["top"]))
    assert sorted(docs) == modules
    assert all(docs[m]["doc"].get("short_description") for m in modules)
