"""Maintenance of the book's notebooks: ``python tools/book.py setup-cells | retarget REPO [SITE] | check``.

One place names the repository and the published site: ``_config.yml``
(``repository.url`` and ``html.baseurl``). Everything else that names them is
derived from there:

- every chapter's setup cell, rendered from ``tools/setup_cell.py.template``
  (the first code cell of each notebook);
- the links of the notebooks and pages to the site, the README, the citation
  file and the package's metadata, which ``retarget`` rewrites.

``make setup-cells`` and ``make retarget REPO=https://github.com/OWNER/NAME
[SITE=URL]`` call this script; ``check`` fails when any place disagrees.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from string import Template

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = ROOT / "tools" / "setup_cell.py.template"
# Files, besides the notebooks, that name the repository or the site.
NAMED_IN = ["_config.yml", "README.md", "CITATION.cff", "CONTRIBUTING.md", "code/pyproject.toml",
            "book/intro.md", "book/glossary.md"]
REPO_PATTERN = re.compile(r"^https://github\.com/[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")


def config_text() -> str:
    return (ROOT / "_config.yml").read_text(encoding="utf-8")


def named() -> tuple[str, str]:
    """The repository URL and the site URL (with its final slash) of ``_config.yml``."""
    text = config_text()
    repo = re.search(r"^\s+url:\s*(\S+)\s*$", text, re.M)
    site = re.search(r"^\s+baseurl:\s*(\S+)\s*$", text, re.M)
    if not repo or not site:
        raise SystemExit("_config.yml must name repository.url and html.baseurl")
    return repo.group(1).rstrip("/"), site.group(1).rstrip("/") + "/"


def package_version() -> str:
    text = (ROOT / "code" / "revformer" / "__init__.py").read_text(encoding="utf-8")
    return re.search(r'^__version__ = "([^"]+)"', text, re.M).group(1)


def notebooks() -> list[Path]:
    return sorted((ROOT / "book").glob("*.ipynb"))


def setup_cell_source() -> str:
    repo, site = named()
    text = Template(TEMPLATE.read_text(encoding="utf-8")).substitute(
        version=package_version(), site_url=site, repo_url=repo)
    return text.rstrip("\n")


def first_code_cell(nb: dict) -> dict:
    return next(c for c in nb["cells"] if c["cell_type"] == "code")


def read(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def write(path: Path, nb: dict) -> None:
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def setup_cells() -> int:
    """Render the template into the first code cell of every notebook."""
    source = setup_cell_source()
    for path in notebooks():
        nb = read(path)
        cell = first_code_cell(nb)
        cell["source"] = source.splitlines(keepends=True)
        cell["metadata"]["tags"] = sorted(set(cell["metadata"].get("tags", [])) | {"remove-cell"})
        write(path, nb)
    return 0


def retarget(repo: str, site: str | None) -> int:
    """Name another repository (and site) in every place that derives from them."""
    repo = repo.rstrip("/")
    if not REPO_PATTERN.match(repo):
        raise SystemExit(f"REPO must look like https://github.com/OWNER/NAME, got {repo!r}")
    owner, name = repo.split("/")[-2:]
    site = (site or f"https://{owner.lower()}.github.io/{name}/").rstrip("/") + "/"
    if not site.startswith(("https://", "http://")):
        raise SystemExit(f"SITE must be an http(s) URL, got {site!r}")
    old_repo, old_site = named()
    for path in [ROOT / p for p in NAMED_IN] + notebooks():
        if path.exists():
            text = path.read_text(encoding="utf-8")
            new = text.replace(old_site, site).replace(old_site.rstrip("/"), site.rstrip("/"))
            new = new.replace(old_repo, repo)
            if new != text:
                path.write_text(new, encoding="utf-8")
    setup_cells()
    print(f"the book now names {repo} and {site}")
    return 0


def problems() -> list[str]:
    """Every place that disagrees with ``_config.yml``."""
    repo, site = named()
    found, source = [], setup_cell_source()
    for path in notebooks():
        if "".join(first_code_cell(read(path))["source"]) != source:
            found.append(f"{path.relative_to(ROOT)}: the setup cell is not the rendered template "
                         "(run make setup-cells)")
    for path in [ROOT / p for p in NAMED_IN] + notebooks():
        if not path.exists():
            continue
        text = path.read_text(encoding="utf-8")
        for url in re.findall(r"https://github\.com/[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+", text):
            if url.rstrip(".") != repo:
                found.append(f"{path.relative_to(ROOT)}: names the repository {url}, not {repo}")
        for url in re.findall(r"https://[A-Za-z0-9_.-]+\.github\.io/[A-Za-z0-9_.-]*", text):
            if not (url + "/").startswith(site) and url.rstrip("/") + "/" != site:
                found.append(f"{path.relative_to(ROOT)}: names the site {url}, not {site}")
    return found


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python tools/book.py", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("setup-cells", help="render the setup cell into every notebook")
    target = commands.add_parser("retarget", help="name another repository (and site)")
    target.add_argument("repo")
    target.add_argument("site", nargs="?")
    commands.add_parser("check", help="fail when any place disagrees with _config.yml")
    args = parser.parse_args(argv)
    if args.command == "setup-cells":
        return setup_cells()
    if args.command == "retarget":
        return retarget(args.repo, args.site)
    found = problems()
    print("\n".join(found) if found else "every place names the repository and site of _config.yml")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
