"""The README's example chaos test works in a project of its own: it imports only the
installed package, and the plugin keeps its dependencies' deprecation warnings out of
that project's runs. No cluster: collection imports everything the test needs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def readme_example() -> str:
    text = (ROOT / "README.md").read_text()
    found = re.search(r"## Writing a chaos test\n```python\n(.*?)```", text, re.S)
    assert found, "README.md has no example under 'Writing a chaos test'"
    return found.group(1)


def test_readme_example_collects_outside_the_repository(tmp_path: Path) -> None:
    project = tmp_path / "elsewhere"
    project.mkdir()
    assert not project.resolve().is_relative_to(ROOT)
    (project / "test_example.py").write_text(readme_example())
    (project / "pytest.ini").write_text("[pytest]\n")  # a user's own config: no filters
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    # pytest shows DeprecationWarnings in its summary by default: no -W needed (and a -W
    # given on the command line would rightly override the plugin's filters)
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-p",
                          "no:cacheprovider"], cwd=project, env=env,
                         capture_output=True, text=True, timeout=300)
    text = out.stdout + out.stderr
    assert out.returncode == 0, text
    assert "1 test collected" in text or "collected 1 item" in text, text
    assert "ModuleNotFoundError" not in text and "ImportError" not in text, text
    assert "DeprecationWarning" not in text and "warnings summary" not in text, text
