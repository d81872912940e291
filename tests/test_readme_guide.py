"""The README's testing guide runs as written: its Python blocks are one passing test file."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


GUIDE_CONFTEST = """
from hypothesis import HealthCheck, settings

settings.register_profile("guide", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("guide")
"""


def guide_code() -> str:
    """The Python blocks of the README's "Testing your agent" section, in order."""
    text = README.read_text(encoding="utf-8")
    section = text.split("## Testing your agent", 1)[1].split("\n## ", 1)[0]
    return "\n\n".join(re.findall(r"```python\n(.*?)```", section, re.DOTALL))


def test_the_testing_guide_runs_as_written(tmp_path: Path) -> None:
    """Every test the guide shows passes when its blocks are saved as one test file."""
    code = guide_code()
    assert code.count("\ndef test_") + code.count("\n@given") >= 4
    (tmp_path / "test_guide.py").write_text(code, encoding="utf-8")
    # What the guide shows is checked, not how fast a loaded machine draws its examples: a
    # slow first draw (imports, another process on the cores) must not fail it.
    (tmp_path / "conftest.py").write_text(GUIDE_CONFTEST, encoding="utf-8")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--hypothesis-seed=0",  # the same examples every time: a guide must not flake
            "test_guide.py",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "4 passed" in done.stdout
