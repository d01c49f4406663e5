#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
---
module: private_dir
short_description: Make a working directory that only the user the tasks run as controls
version_added: 1.0.0
description:
  - Creates O(path) with mode 0700, or accepts it when it already exists as a real directory (not a symbolic link)
    owned by the user the task runs as, with no group or other write permission.
  - Every directory above O(path) is checked too, before anything is made. Each one must belong to root or that
    user, and one that group or others may write to must carry the sticky bit, as C(/tmp) and C(/var/tmp) do.
    Otherwise another user could rename the directory away and put one of their own in its place.
  - Use it for a folder under a shared parent from which root then runs scripts or writes files. On a shared host,
    another user may have made the folder first, or planted a link there. Such a path is refused with what is
    wrong and whose it is, and nothing is created.
  - O(state=absent) removes the directory and what is in it, without following links, once it passes the same
    checks.
author:
  - roce.fabric contributors (@roce-fabric)
extends_documentation_fragment:
  - roce.fabric.attributes
attributes:
  platform:
    description: Runs on the host that holds the directory.
    support: full
    platforms: posix
options:
  path:
    description:
      - An absolute path of letters, digits and C(_ . @ + -) parts, without C(.) or C(..) parts and not C(/).
      - Missing parent directories are created with mode 0755 once the existing ones pass the checks.
    type: path
    required: true
  state:
    description: V(present) makes or accepts the directory, V(absent) removes it.
    type: str
    choices: [present, absent]
    default: present
notes:
  - In check mode nothing is created or removed; a path that would be refused still fails the task.
  - The C(roce.fabric.validate) role makes its working directory (C(validate_work_dir)) with this module.
"""

EXAMPLES = r"""
- name: A private folder for scripts that root runs
  roce.fabric.private_dir:
    path: /var/tmp/roce-fabric-validate

- name: Remove it when done
  roce.fabric.private_dir:
    path: /var/tmp/roce-fabric-validate
    state: absent
"""

RETURN = r"""
path:
  description: The directory, as an absolute path.
  returned: always
  type: str
  sample: /var/tmp/roce-fabric-validate
owner:
  description: The user the task runs as, who owns the directory.
  returned: always
  type: str
  sample: root
commands:
  description: What was done (or, in check mode, what a real run does) - the directory made or removed.
  returned: always
  type: list
  elements: str
  sample: ["mkdir -m 0700 /var/tmp/roce-fabric-validate"]
"""

import os
import re
import shutil

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.roce.fabric.plugins.module_utils.common.private import (PrivateDirError, check_private_dir,
                                                                                 current_user, private_dir)
from ansible_collections.roce.fabric.plugins.module_utils.common.run import ModuleRun

PATH_RE = re.compile(r"^(/[A-Za-z0-9_.@+-]+)+/?$")


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            state=dict(type="str", default="present", choices=["present", "absent"]),
        ),
        supports_check_mode=True,
    )
    path = module.params["path"]
    if not PATH_RE.match(path or "") or any(part in (".", "..") for part in path.split("/")):
        module.fail_json(msg="path must be an absolute path of letters, digits and _ . @ + - parts without . or .. "
                             "parts (got %r); nothing was changed" % path)
    path = path.rstrip("/")
    run = ModuleRun(module, path=path, owner=current_user())

    def body(run):
        try:
            if module.params["state"] == "present":
                missing = private_dir(path, check_mode=True)
                run.set_diff(dict(path=path, state="absent" if missing else "present"), dict(path=path, state="present"))
                if missing:
                    run.mutate("mkdir -m 0700 %s" % path, lambda: private_dir(path))
                return
            if not os.path.lexists(path):
                run.set_diff(dict(path=path, state="absent"), dict(path=path, state="absent"))
                return
            check_private_dir(path)
            run.set_diff(dict(path=path, state="present"), dict(path=path, state="absent"))
            # A private directory cannot gain a link another user planted; rmtree does not follow links anyway.
            run.mutate("rm -r %s" % path, lambda: shutil.rmtree(path))
        except PrivateDirError as exc:
            run.fail("%s; nothing was changed" % exc)
        except (IOError, OSError) as exc:
            run.fail("Cannot use %s: %s" % (path, exc))

    run.execute(body)


if __name__ == "__main__":
    main()
