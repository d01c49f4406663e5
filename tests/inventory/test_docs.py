"""The documentation's references are real, and what the tarball ships never sends a user to a file it does not have.

- Every repository path a Markdown page names (``tests/peer/test_onyx_roce_peer.py``, ``roles/validate/README.md``,
  ``playbooks/roce.yml``, ...) exists.
- A page that is shipped (README.md, docs/ but docs/contributing/, every role's README) names no path the tarball
  leaves out (galaxy.yml's build_ignore: the lab, the tests, molecule, the contributors' docs) except as a link to
  the repository on GitHub.
- Every module has its page in docs/modules/ and every role its README; the README's tables name them all.
"""

from __future__ import annotations

import fnmatch
import glob
import os
import re

import pytest
import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOP = ("tests", "roles", "playbooks", "plugins", "docs", "inventories", "lab", "molecule", "meta", "changelogs")
PATH_RE = re.compile(r"(?<![\w/.:-])((?:%s)/[A-Za-z0-9_.*/-]*[A-Za-z0-9_*])" % "|".join(TOP))
URL_RE = re.compile(r"https?://\S+")


def pages():
    found = [os.path.join(REPO, "README.md")]
    found += glob.glob(os.path.join(REPO, "docs", "**", "*.md"), recursive=True)
    found += glob.glob(os.path.join(REPO, "roles", "*", "README.md"))
    return sorted(found)


def shipped(page):
    return not os.path.relpath(page, REPO).startswith("docs/contributing/")


def build_ignore():
    with open(os.path.join(REPO, "galaxy.yml")) as handle:
        return yaml.safe_load(handle)["build_ignore"]


def ignored(path, patterns):
    return any(path == p or path.startswith(p.rstrip("/") + "/") or fnmatch.fnmatch(path, p) for p in patterns)


LINK_RE = re.compile(r"\[[^\]]*\]\(https?://[^)]*\)")


def named_paths(page):
    """Repository paths the page names, outside links to the repository on GitHub; a role's README may name its
    own files relative to the role. ``mysite`` is the operator's own inventory in the guides."""
    with open(page) as handle:
        text = URL_RE.sub("", LINK_RE.sub("", handle.read()))
    role = os.path.relpath(os.path.dirname(page), REPO) if os.path.relpath(page, REPO).startswith("roles/") else None
    for match in PATH_RE.finditer(text):
        path = match.group(1).rstrip(".")
        if "*" in path or "mysite" in path:
            continue
        if role and not os.path.exists(os.path.join(REPO, path)) and os.path.exists(os.path.join(REPO, role, path)):
            path = os.path.join(role, path)
        yield path


@pytest.mark.parametrize("page", pages(), ids=lambda p: os.path.relpath(p, REPO))
def test_every_path_a_page_names_exists_and_is_shipped_where_the_page_is(page):
    missing, unshipped = [], []
    patterns = build_ignore()
    for path in named_paths(page):
        if not os.path.exists(os.path.join(REPO, path)):
            missing.append(path)
        elif shipped(page) and ignored(path, patterns):
            unshipped.append(path)
    assert missing == [], "%s names paths that do not exist" % os.path.relpath(page, REPO)
    assert unshipped == [], ("%s is shipped but names files the tarball leaves out (link them on GitHub instead)"
                             % os.path.relpath(page, REPO))


def test_every_module_has_a_page_and_every_role_a_readme_and_the_readme_names_them():
    with open(os.path.join(REPO, "README.md")) as handle:
        readme = handle.read()
    for module in glob.glob(os.path.join(REPO, "plugins", "modules", "*.py")):
        name = os.path.splitext(os.path.basename(module))[0]
        assert os.path.exists(os.path.join(REPO, "docs", "modules", name + ".md")), name
        assert "`roce.fabric.%s`" % name in readme, name
    for role in glob.glob(os.path.join(REPO, "roles", "*", "")):
        name = os.path.basename(role.rstrip("/"))
        assert os.path.exists(os.path.join(role, "README.md")), name
        assert "`roce.fabric.%s`" % name in readme, name
    for example in glob.glob(os.path.join(REPO, "inventories", "examples", "*", "")):
        assert "`%s`" % os.path.basename(example.rstrip("/")) in readme


def test_switches_are_named_with_both_of_their_oses_where_an_operator_looks_first():
    with open(os.path.join(REPO, "galaxy.yml")) as handle:
        galaxy = yaml.safe_load(handle)
    assert "Cumulus" in galaxy["description"] and "Onyx" in galaxy["description"]
    assert {"nvidia", "mellanox", "cumulus", "onyx", "hpc"} <= set(galaxy["tags"])
    with open(os.path.join(REPO, "README.md")) as handle:
        intro = handle.read().split("## ")[0]
    assert "Cumulus Linux" in intro and "Onyx" in intro
    with open(os.path.join(REPO, "playbooks", "roce.yml")) as handle:
        header = handle.read().split("- name:")[0]
    assert "Cumulus Linux" in header and "Onyx" in header
