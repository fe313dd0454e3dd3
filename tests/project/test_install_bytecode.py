"""scripts/compile_sandbox_bytecode.py: the install writes the bytecode of what the sandboxed processes load and of
the other modules of the folders those came from, nothing else, even where PYTHONDONTWRITEBYTECODE is set."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

RUN = """
import json, sys
from pathlib import Path
sys.path[:0] = [sys.argv[1], sys.argv[2]]
import compile_sandbox_bytecode as c
files = c.compile_for(("single", "not_installed"), Path(sys.argv[1]))
print(json.dumps([str(f.relative_to(sys.argv[1])) for f in files]))
"""


def test_bytecode_for_what_was_loaded_and_its_folders_siblings_only(tmp_path):
    site = (tmp_path / "site").resolve()
    (site / "loaded" / "deep").mkdir(parents=True)
    (site / "loaded" / "__init__.py").write_text("from loaded import used\n")
    (site / "loaded" / "used.py").write_text("X = 1\n")
    (site / "loaded" / "sibling.py").write_text("Y = 2\n")  # a submodule imported later, on demand
    (site / "loaded" / "deep" / "__init__.py").write_text("")  # a folder nothing was imported from
    (site / "never").mkdir()
    (site / "never" / "__init__.py").write_text("")
    (site / "single.py").write_text("import loaded\n")
    done = subprocess.run(
        [sys.executable, "-c", RUN, str(site), str(REPO / "scripts")],
        capture_output=True,
        text=True,
        env={"PYTHONDONTWRITEBYTECODE": "1", "PATH": "/usr/bin:/bin"},  # as on machines that set it
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    expected = ["loaded/__init__.py", "loaded/sibling.py", "loaded/used.py", "single.py"]
    assert json.loads(done.stdout) == expected
    # __pycache__/NAME.cpython-3XX.pyc, named by the module it belongs to
    compiled = sorted(str((p.parent.parent / p.name.split(".")[0]).relative_to(site)) for p in site.rglob("*.pyc"))
    assert compiled == ["loaded/__init__", "loaded/sibling", "loaded/used", "single"]
