# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""container_image through main(), with a stand-in builder on the PATH that records its argv and environment."""

from __future__ import annotations

import json
import os

from ansible_collections.roce.fabric.plugins.modules import container_image
from ansible_collections.roce.fabric.tests.unit.plugins.modules.utils import run_module

# podman image inspect of an image podman does not have answers as podman did in the container corpus
# (fixtures/container/podman_image_inspect_missing.txt: "Error: inspecting object: <ref>: image not known", rc 125).
STAND_IN = """#!/bin/sh
python3 - "$@" <<'PY'
import json, os, sys
with open(os.environ["RECORD"], "a") as out:
    out.write(json.dumps(dict(argv=sys.argv[1:], token=os.environ.get("TOKEN"))) + "\\n")
if sys.argv[1:3] == ["image", "inspect"]:
    sys.stderr.write("Error: inspecting object: %s: image not known\\n" % sys.argv[3])
    sys.exit(125)
PY
"""


def test_a_secret_build_argument_is_in_no_command_line_or_record(tmp_path, monkeypatch):
    """Hardening (issue 37, 16): build argument values were on the builder's command line (ps) and in the commands
    record. A secret_build_args value now reaches the builder only through its environment (--build-arg NAME)."""
    podman = tmp_path / "bin" / "podman"
    podman.parent.mkdir()
    podman.write_text(STAND_IN)
    podman.chmod(0o755)
    record = tmp_path / "record.jsonl"
    monkeypatch.setenv("PATH", "%s:%s" % (podman.parent, os.environ["PATH"]))
    monkeypatch.setenv("RECORD", str(record))
    context = tmp_path / "ctx"
    context.mkdir()
    (context / "Containerfile").write_text("FROM scratch\n")
    result = run_module(container_image.main, dict(name="localhost/job", tag="1.0", context=str(context),
                                                   builder="podman", build_args={"VERSION": "24.10"},
                                                   secret_build_args={"TOKEN": "s3cr3t-t0ken"}))
    assert result.get("failed") is not True, result
    calls = [json.loads(line) for line in record.read_text().splitlines()]
    build = [c for c in calls if c["argv"][0] == "build"][0]
    assert "--build-arg" in build["argv"] and "TOKEN" in build["argv"] and "VERSION=24.10" in build["argv"]
    assert build["token"] == "s3cr3t-t0ken"
    assert "s3cr3t-t0ken" not in json.dumps(result) and all("s3cr3t" not in a for c in calls for a in c["argv"])
    assert [c for c in calls if c["argv"][0] == "image"][0]["token"] is None, "only the build gets the secret"
