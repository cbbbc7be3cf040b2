"""The book's own tasks: ``python tools/book.py build [--seed N] | setup-cells | retarget REPO [SITE] | check``.

``build`` is the whole book build, the one ``make book`` runs: the experiment
and its downloads, the package's wheel, the chapter notebooks as downloads,
then every chapter executed and the site built with warnings as errors, then
the Chinese edition from the same executed chapters, into ``_build/html/zh_CN``
(``tools/translations.py``).

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
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from string import Template

sys.path.insert(0, str(Path(__file__).resolve().parent))
from site_config import named, package_version  # noqa: E402  (the one reader of _config.yml)

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = ROOT / "tools" / "setup_cell.py.template"
# Files, besides the notebooks, that name the repository or the site.
NAMED_IN = ["_config.yml", "README.md", "CITATION.cff", "CONTRIBUTING.md", "code/pyproject.toml",
            "code/revformer/web.py", "code/revformer/landing.py", "book/intro.md", "book/glossary.md", "book/playground.md",
            "book/teaching.md"]
REPO_PATTERN = re.compile(r"^https://github\.com/[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")


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
    """Render the template into the first code cell of every notebook (the Chinese ones too)."""
    source = setup_cell_source()
    for path in notebooks():
        nb = read(path)
        cell = first_code_cell(nb)
        cell["source"] = source.splitlines(keepends=True)
        cell["metadata"]["tags"] = sorted(set(cell["metadata"].get("tags", [])) | {"remove-cell"})
        write(path, nb)
    _translations().write_notebooks()  # zh_CN/book: their setup cells and links derive from the same
    return 0


def _translations():
    sys.path.insert(0, str(ROOT / "tools"))
    import translations

    return translations


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
    for path in [ROOT / p for p in NAMED_IN] + notebooks() + sorted((ROOT / "locale").rglob("*.po")):
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
            if "OWNER" in url:  # a placeholder in the instructions for forks
                continue
            if url.rstrip(".") != repo:
                found.append(f"{path.relative_to(ROOT)}: names the repository {url}, not {repo}")
        for url in re.findall(r"https://[A-Za-z0-9_.-]+\.github\.io/[A-Za-z0-9_.-]*", text):
            if "OWNER" in url:
                continue
            if not (url + "/").startswith(site) and url.rstrip("/") + "/" != site:
                found.append(f"{path.relative_to(ROOT)}: names the site {url}, not {site}")
    return found + _translations().outdated_notebooks()


BUILD = ROOT / "_build"
DOWNLOADS = BUILD / "site-extra" / "downloads"  # served at /downloads/ (html_extra_path)
WEB = BUILD / "site-extra" / "web"  # served at /web/: the model in the browser


def _run(*command, env=None) -> None:
    print("+", " ".join(str(c) for c in command), flush=True)
    subprocess.run([str(c) for c in command], cwd=ROOT, env=env, check=True)


def _build_hash(seed: int, python: str) -> str:
    """What decides the chapters' outputs besides their own text: seed, package code, requirements."""
    fingerprint = subprocess.run([python, "-m", "revformer.fingerprint"], cwd=ROOT, check=True,
                                 capture_output=True, text=True).stdout.strip()
    requirements = hashlib.sha256(b"".join(p.read_bytes() for p in sorted((ROOT / "requirements").glob("*.txt"))))
    # the compiled catalogue: the outputs carry every sentence and figure in every language
    # (the package's own, not a copy that a wheel build leaves in code/build for a while)
    catalogue = hashlib.sha256(b"".join(p.read_bytes() for p in sorted((ROOT / "code" / "revformer").rglob("*.mo"))))
    return (f"seed {seed} package {fingerprint} requirements {requirements.hexdigest()[:16]} "
            f"catalogue {catalogue.hexdigest()[:16]}")


SERVED_LOG = BUILD / "served-loads.jsonl"


def _wheel(python: str, source: Path, env: dict) -> None:
    """The package's wheel, built from ``source`` into the downloads in place of the old one."""
    for old in DOWNLOADS.glob("revformer-*.whl"):
        old.unlink()
    _run(python, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "--wheel-dir", DOWNLOADS,
         source, env=env)


def _serve_runs(python: str, env: dict) -> None:
    """The runs the chapters loaded, into the site's downloads/runs with their manifest, and the
    wheel built again from a copy of the package that carries the manifest (revformer.served)."""
    wheel_source = BUILD / "wheel-source"
    shutil.rmtree(wheel_source, ignore_errors=True)
    shutil.copytree(ROOT / "code", wheel_source,
                    ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    _run(python, "-c", "import sys; from revformer.served import write_served; "
         "write_served(*sys.argv[1:4], manifest_path=sys.argv[4])", SERVED_LOG,
         DOWNLOADS / "runs", named()[1], wheel_source / "revformer" / "served_runs.manifest", env=env)
    _wheel(python, wheel_source, env)
    shutil.rmtree(wheel_source, ignore_errors=True)
    site = BUILD / "html" / "downloads"
    shutil.rmtree(site / "runs", ignore_errors=True)
    shutil.copytree(DOWNLOADS / "runs", site / "runs")
    for wheel in DOWNLOADS.glob("revformer-*.whl"):
        shutil.copy(wheel, site / wheel.name)


def build(seed: int) -> int:
    """The whole book, as ``make book`` builds it (the README's recipe without make calls this too)."""
    python = sys.executable
    env = dict(os.environ, REVFORMER_SEED=str(seed), REVFORMER_PROGRESS=os.environ.get("REVFORMER_PROGRESS", "0"))
    env.setdefault("REVFORMER_CACHE", str(BUILD / "revformer-cache"))  # trained models, kept between builds
    # every run the chapters load is recorded here, and served with the site (revformer.served)
    env["REVFORMER_SERVED_LOG"] = str(SERVED_LOG)
    BUILD.mkdir(exist_ok=True)
    # Chapter outputs are cached by notebook text (in _build/.jupyter_cache): when anything else that
    # decides them changes, every chapter is executed afresh.
    stamp, current = BUILD / ".package-hash", _build_hash(seed, python)
    if not stamp.exists() or stamp.read_text() != current:
        print("the seed, the package or the requirements changed: executing every chapter afresh")
        for name in (".jupyter_cache", ".doctrees", "jupyter_execute", "html"):
            shutil.rmtree(BUILD / name, ignore_errors=True)
        SERVED_LOG.unlink(missing_ok=True)  # every chapter loads its runs again
        stamp.write_text(current)
    # Sphinx writes again only the pages whose sources changed, and renders the search scorer into
    # language_data.js only when it writes pages: a site written by another version of the book's extension
    # (book/_ext: its handlers, static files and scorer) is written again whole.
    sites, extension = (BUILD / "html", BUILD / "zh_CN" / "_build" / "html"), _extension_hash()
    for site in sites:
        stamp = site / ".revformer-extension"
        if site.exists() and (not stamp.exists() or stamp.read_text() != extension):
            shutil.rmtree(site)
    _run(python, "-m", "revformer", "reproduce", "--out", DOWNLOADS, "--seed", seed, "--quiet", env=env)
    _run(python, "-m", "revformer", "sweep", "--out", DOWNLOADS, "--quiet", env=env)  # the seeds chapters
    _run(python, "-m", "revformer", "web", "--out", WEB, env=env)  # the trained models for the browser
    _wheel(python, ROOT / "code", env)
    shutil.rmtree(ROOT / "code" / "build", ignore_errors=True)  # what setuptools leaves behind
    (DOWNLOADS / "notebooks").mkdir(parents=True, exist_ok=True)
    for notebook in notebooks():
        shutil.copy(notebook, DOWNLOADS / "notebooks" / notebook.name)
    env["REVFORMER_STATIC_BUILD"] = "1"
    # The kernels draw every figure in every language (revformer.i18n.watch_figures), from IPython's startup folder.
    from revformer.i18n import startup_folder

    env["IPYTHONDIR"] = str(startup_folder(BUILD / "ipython"))
    _run(python, "-c", "from jupyter_book.cli.main import main; main()", "build", ".", "-W", "-n",
         "--keep-going", env=env)
    _serve_runs(python, env)
    _run(python, ROOT / "tools" / "student.py", "answers", env=env)  # the graded answers, for the exports
    _run(python, ROOT / "tools" / "book.py", "figure-packs", env=env)
    # The Chinese edition, from the English one's executed notebooks (tools/translations.py).
    _run(python, ROOT / "tools" / "translations.py", "build", "--build", BUILD, env=env)
    for site in sites:
        (site / ".revformer-extension").write_text(extension)
    return 0


FIGURES = DOWNLOADS / "figures"
SITE_FIGURES = BUILD / "html" / "downloads" / "figures"


def figure_packs(out: Path = FIGURES, site: Path | None = SITE_FIGURES) -> list[Path]:
    """Each chapter's numbered figures in one archive, for slides: ``downloads/figures/NN.zip``.

    The figures as the pages show them (PNG at twice their shown size), one folder per language (``en/``,
    ``zh_CN/``), named by their number on the page ("figure-10.2.png"), with ``captions.txt`` (the captions as
    plain text), and ``LICENSE.txt``: the figures' licence and the credit line to use. The numbered figures are
    the captioned ones, in order, as the book's extension numbers them (book/_ext). Into ``out`` (the site's
    downloads), and copied into ``site`` (the built site's), from the English build's executed chapters.
    """
    sys.path.insert(0, str(ROOT / "tools"))
    import translations

    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    written = []
    for notebook in notebooks():
        figures = _chapter_figures(translations.executed(BUILD, notebook),
                                   read(translations.ZH / "book" / notebook.name))
        if figures["en"]:
            written.append(_figure_pack(out / f"{notebook.name[:2]}.zip", notebook.stem, figures))
    if site is not None:
        shutil.rmtree(site, ignore_errors=True)
        shutil.copytree(out, site)
    return written


def _chapter_figures(executed: dict, zh: dict) -> dict:
    """``{"en": [(png, caption), ...], "zh_CN": [...]}``: a chapter's captioned figures, in order."""
    from revformer.i18n import METADATA_KEY

    def caption_of(cell):
        return cell.get("metadata", {}).get("mystnb", {}).get("figure", {}).get("caption")

    zh_captions = {c.get("id"): caption_of(c) for c in zh["cells"]}
    figures = {"en": [], "zh_CN": []}
    for cell in executed["cells"]:
        caption = caption_of(cell)
        images = [o for o in cell.get("outputs", []) if "image/png" in o.get("data", {})]
        if not caption or not images:
            continue
        output = images[0]
        both = output.get("metadata", {}).get(METADATA_KEY, {})
        figures["en"].append((output["data"]["image/png"], caption))
        figures["zh_CN"].append((both.get("zh_CN", {}).get("image/png", output["data"]["image/png"]),
                                 zh_captions.get(cell.get("id")) or caption))
    return figures


FIGURE_NAMES = {"en": "figure-{chapter}.{number}.png", "zh_CN": "图-{chapter}.{number}.png"}


def _figure_pack(path: Path, stem: str, figures: dict) -> Path:
    """One chapter's archive at ``path``: per language its PNGs (base64 in ``figures``) and ``captions.txt``
    ("name<TAB>caption" a line, the caption as plain text), and ``LICENSE.txt``, in both languages."""
    import base64
    import zipfile

    chapter = int(stem[:2])
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for language, found in figures.items():
            lines = []
            for number, (data, caption) in enumerate(found, start=1):
                name = FIGURE_NAMES[language].format(chapter=chapter, number=number)
                png = base64.b64decode("".join(data) if isinstance(data, list) else data)
                archive.writestr(f"{language}/{name}", png)
                lines.append(f"{name}\t{plain_caption(caption)}")
            archive.writestr(f"{language}/captions.txt", "\n".join(lines) + "\n")
        archive.writestr("LICENSE.txt", figure_licence(stem))
    return path


_CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.S)
_MATH = re.compile(r"\$\$(.+?)\$\$|(?<![\\$\w])\$(?=\S)([^$\n]+?)(?<=[^\s\\])\$(?![\d$])", re.S)
_ESCAPED = re.compile(r"\\([\\`*_{}\[\]()#+\-.!$<>~|])")


def plain_caption(text: str) -> str:
    """A caption's Markdown as plain text, for a slide: code spans lose their backticks, emphasis and strong
    emphasis their stars or underscores, links and images keep their text, math its dollar signs (the TeX
    inside stays as written), escaped characters their backslash; runs of white space become one space."""
    kept = []

    def keep(value: str) -> str:
        kept.append(value)
        return f"\0{len(kept) - 1}\0"

    text = _CODE_SPAN.sub(lambda m: keep(m.group(2).strip() if m.group(2).strip() else m.group(2)), str(text))
    text = _MATH.sub(lambda m: keep((m.group(1) or m.group(2)).strip()), text)
    text = _ESCAPED.sub(lambda m: keep(m.group(1)), text)
    text = re.sub(r"!?\[([^\]]*)\]\([^)\s]*(?:\s+\"[^\"]*\")?\)", r"\1", text)  # [text](url), ![alt](src)
    text = re.sub(r"!?\[([^\]]+)\]\[[^\]]*\]", r"\1", text)  # [text][ref]
    text = re.sub(r"<((?:https?|mailto):[^>\s]+)>", r"\1", text)  # <https://...>
    for marker in (r"\*\*\*", r"___", r"\*\*", r"__", r"\*", r"_", r"~~"):
        # emphasis opens before a non-space and closes after one; underscores only at a word's edge (one_head stays)
        edge = (r"(?<!\w)", r"(?!\w)") if "_" in marker else ("", "")
        text = re.sub(rf"{edge[0]}{marker}(?=\S)(.+?)(?<=\S){marker}{edge[1]}", r"\1", text, flags=re.S)
    text = re.sub(r"\0(\d+)\0", lambda m: kept[int(m.group(1))], text)
    return " ".join(text.split())


LICENCE_URL = "https://creativecommons.org/licenses/by/4.0/"


def figure_credit() -> str:
    """The credit the project asks for, as ``LICENSE-TEXT.md`` words it ("Title", the authors)."""
    text = " ".join((ROOT / "LICENSE-TEXT.md").read_text(encoding="utf-8").split())
    found = re.search(r"give appropriate credit \((\"[^\"]+\"[^)]*)\)", text)
    if not found:
        raise SystemExit("LICENSE-TEXT.md no longer says 'give appropriate credit (\"Title\", the authors)': "
                         "the figure packs take their credit line from there")
    return found.group(1).strip()


def figure_licence(stem: str) -> str:
    """``LICENSE.txt`` of a chapter's figure pack, in English and Chinese: the licence, the credit line with the
    site of ``_config.yml`` (a retargeted fork names itself), and the chapter's page in each edition."""
    sys.path.insert(0, str(ROOT / "tools"))
    from translations import TITLE

    site = named()[1]
    chapter = int(stem[:2])
    credit = figure_credit()
    example = f"{chapter}.1"  # the first figure's number, as the credit line's example
    return "\n".join([
        f"The figures of chapter {chapter}.",
        f"From: {credit}",
        f"Book: {site}",
        f"Chapter: {site}book/{stem}.html",
        "",
        "Licence: Creative Commons Attribution 4.0 International (CC BY 4.0)",
        LICENCE_URL,
        "",
        "You may share and adapt these figures for any purpose, including a course of your own, provided you",
        "give appropriate credit, link to the licence, and indicate if changes were made. Credit them as:",
        "",
        f"    Figure {example}: {credit}, {site}, CC BY 4.0 ({LICENCE_URL})",
        "",
        "Add \"adapted\" to the credit line of a figure you changed.",
        "",
        "----",
        "",
        f"第 {chapter} 章的图。",
        f"出自：《{TITLE}》（{credit}）",
        f"本书：{site}zh_CN/",
        f"本章：{site}zh_CN/book/{stem}.html",
        "",
        "许可协议：知识共享 署名 4.0 国际（CC BY 4.0）",
        "https://creativecommons.org/licenses/by/4.0/deed.zh-hans",
        "",
        "你可以为任何目的（包括你自己的课程）分享和改编这些图，只需适当署名、附上许可协议的链接，并注明是否作了修改。署名可写作：",
        "",
        f"    图 {example}：{credit}，{site}zh_CN/，CC BY 4.0（{LICENCE_URL}）",
        "",
        "若改动了某张图，请在它的署名后注明“有改动”。",
        "",
    ])


def _extension_hash() -> str:
    """SHA-256 over the files of the book's Sphinx extension (book/_ext), by path and content."""
    digest = hashlib.sha256()
    for path in sorted(p for p in (ROOT / "book" / "_ext").rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        digest.update(path.relative_to(ROOT).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python tools/book.py", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    builder = commands.add_parser("build", help="the experiment, the downloads and the book (make book)")
    builder.add_argument("--seed", type=int, default=42, help="seed of the models' initial weights")
    commands.add_parser("setup-cells", help="render the setup cell into every notebook")
    target = commands.add_parser("retarget", help="name another repository (and site)")
    target.add_argument("repo")
    target.add_argument("site", nargs="?")
    commands.add_parser("check", help="fail when any place disagrees with _config.yml")
    commands.add_parser("figure-packs", help="each chapter's figures in one archive per language (make book)")
    args = parser.parse_args(argv)
    if args.command == "build":
        return build(args.seed)
    if args.command == "setup-cells":
        return setup_cells()
    if args.command == "figure-packs":
        written = figure_packs()
        print(f"{len(written)} figure packs in {FIGURES}")
        return 0
    if args.command == "retarget":
        return retarget(args.repo, args.site)
    found = problems()
    print("\n".join(found) if found else "every place names the repository and site of _config.yml")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
