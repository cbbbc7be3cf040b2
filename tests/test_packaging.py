"""What `pip install ./code` (and Colab's `pip install git+...#subdirectory=code`) ships."""
import fnmatch
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_subpackage_is_shipped():
    project = tomllib.loads((ROOT / "code" / "pyproject.toml").read_text())
    include = project["tool"]["setuptools"]["packages"]["find"]["include"]
    packages = [".".join(p.parent.relative_to(ROOT / "code").parts)
                for p in (ROOT / "code" / "revformer").rglob("__init__.py")]
    assert "revformer.exercises" in packages
    for package in packages:
        assert any(fnmatch.fnmatch(package, pattern) for pattern in include), package


def test_dependencies_are_ranges_colab_satisfies():
    deps = tomllib.loads((ROOT / "code" / "pyproject.toml").read_text())["project"]["dependencies"]
    names = {d.split(">")[0].split("=")[0].split("<")[0].strip() for d in deps}
    assert names == {"torch", "numpy", "matplotlib", "ipywidgets", "tqdm"}
    assert not any("==" in d for d in deps), "pins would make Colab reinstall its own packages"
