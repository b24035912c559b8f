"""Documentation a pip user can follow: the options table, citations, vignettes, extras.

* docs/methods.md lists every option of every built-in method under that method's heading
  (and, where a method declares its options with defaults, the same defaults);
* nothing a user reads points into the project's private working files (``../shared``,
  the internal spec, "seed 000"-style paper numbers): papers are cited by authors and year;
* vignettes say which extras they need and use only the public API;
* every required dependency is imported by the package, and every extra is used.
"""
import ast
import configparser
import pathlib
import re

import pytest

import dpstats
from dpstats import methods

ROOT = pathlib.Path(__file__).resolve().parents[1]
METHODS_DOC = ROOT / "docs" / "methods.md"
BUILT_IN = sorted(methods._MODULES)


def doc_sections(path):
    """{heading: text} for the level-2 sections of a markdown file."""
    sections, name = {}, None
    for line in path.read_text().splitlines():
        if line.startswith("## "):
            name = line[3:].strip()
            sections[name] = []
        elif name is not None:
            sections[name].append(line)
    return {k: "\n".join(v) for k, v in sections.items()}


def option_rows(section):
    """{option name: [cells]} of the table rows ``| `name` | type | default | meaning |``."""
    rows = {}
    for line in section.splitlines():
        m = re.match(r"^\|\s*`([A-Za-z_][A-Za-z0-9_]*)`\s*\|", line)
        if m:
            rows[m.group(1)] = [c.strip() for c in line.strip().strip("|").split("|")]
    return rows


def test_every_built_in_method_has_a_section_and_no_section_is_stale():
    sections = doc_sections(METHODS_DOC)
    method_sections = set(sections) - {"Arguments of every call", "Curator report keys", "Conditions"}
    assert set(BUILT_IN) <= method_sections, f"missing sections: {sorted(set(BUILT_IN) - method_sections)}"
    assert method_sections <= set(BUILT_IN), f"sections of unknown methods: {sorted(method_sections - set(BUILT_IN))}"


@pytest.mark.parametrize("name", BUILT_IN)
def test_every_option_is_documented_under_its_method(name):
    method = methods.get_method(name)
    rows = option_rows(doc_sections(METHODS_DOC)[name])
    missing = [o for o in method.option_names if o not in rows]
    assert not missing, f"docs/methods.md, section {name!r}, lacks options {missing}"
    stale = sorted(set(rows) - set(method.option_names))
    assert not stale, f"docs/methods.md, section {name!r}, documents options the method does not accept: {stale}"


@pytest.mark.parametrize("name", BUILT_IN)
def test_documented_defaults_match_declared_defaults(name):
    method = methods.get_method(name)
    declared = getattr(method, "options", None)
    if not declared or not all(hasattr(o, "default") for o in declared):
        pytest.skip("the method does not declare its options with defaults")
    rows = option_rows(doc_sections(METHODS_DOC)[name])
    for option in declared:
        cell = rows[option.name][2]
        literal = re.match(r"`([^`]*)`", cell)
        assert literal, f"{name}.{option.name}: the default cell {cell!r} does not start with a `literal`"
        assert ast.literal_eval(literal.group(1)) == option.default, (
            f"docs/methods.md says {name}.{option.name} defaults to {literal.group(1)}; the code says "
            f"{option.default!r}")


def test_every_common_argument_of_dp_select_is_documented():
    import inspect

    rows = option_rows(doc_sections(METHODS_DOC)["Arguments of every call"])
    names = [p.name for p in inspect.signature(dpstats.dp_select).parameters.values()
             if p.kind is not inspect.Parameter.VAR_KEYWORD]
    documented = set(rows) | {"s", "k"}  # one row `s`, `k`
    missing = [n for n in names if n not in documented]
    assert not missing, f"docs/methods.md lacks dp_select arguments {missing}"


FORBIDDEN = ("../shared", "shared/spec", "seed 00", "seeds 00", "spec 0")


def user_facing_files():
    files = [ROOT / "README.md"]
    for folder, pattern in (("dpstats", "*.py"), ("vignettes", "*.py"), ("docs", "*.md"), ("benchmarks", "*")):
        files += [p for p in (ROOT / folder).rglob(pattern) if p.is_file() and "__pycache__" not in p.parts]
    files += [ROOT / "data" / "CODEBOOK.md", ROOT / "data" / "datasets.json"]
    return files


def test_no_user_facing_text_points_to_project_internals():
    hits = []
    for path in user_facing_files():
        text = path.read_text(errors="replace").lower()
        for needle in FORBIDDEN:
            for m in re.finditer(re.escape(needle), text):
                line = text.count("\n", 0, m.start()) + 1
                hits.append(f"{path.relative_to(ROOT)}:{line}: {needle!r}")
    assert not hits, "cite papers by authors and year, and the package's own docs:\n" + "\n".join(hits)


def test_readme_links_the_docs_that_exist():
    readme = (ROOT / "README.md").read_text()
    for page in ("docs/methods.md", "docs/privacy.md", "docs/references.md", "benchmarks/README.md"):
        assert (ROOT / page).is_file(), page
        assert f"({page}" in readme, f"README.md does not link {page}"


VIGNETTES = sorted((ROOT / "vignettes").glob("*.py"))


def leading_comment(path):
    lines = []
    for line in path.read_text().splitlines():
        if line.startswith("#") or not line.strip():
            lines.append(line)
        else:
            break
    return "\n".join(lines)


@pytest.mark.parametrize("path", VIGNETTES, ids=[p.name for p in VIGNETTES])
def test_vignette_says_which_extras_it_needs(path):
    head = leading_comment(path)
    assert "pip install" in head, f"{path.name}: say at the top what to install (pip install ...)"
    source = path.read_text()
    needs = {"lasso": '"samp_agg"' in source or ('"dpvote"' in source and '"y ~' in source),
             "dask": re.search(r"^\s*(import dask|from dask|from distributed)", source, flags=re.M) is not None}
    for extra, used in needs.items():
        if used:
            assert re.search(rf"dpstats\[[a-z,]*{extra}[a-z,]*\]", head), f"{path.name} needs dpstats[{extra}]"


@pytest.mark.parametrize("path", VIGNETTES, ids=[p.name for p in VIGNETTES])
def test_vignette_uses_only_the_public_api(path):
    public = set(dpstats.__all__) | {"__version__"}
    bad = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            bad += [a.name for a in node.names if a.name.startswith("dpstats.")]
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "dpstats":
            if node.module != "dpstats":
                bad.append(f"from {node.module} import ...")
            else:
                bad += [f"dpstats.{a.name}" for a in node.names if a.name not in public]
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "dpstats":
            if node.attr not in public:
                bad.append(f"dpstats.{node.attr}")
    assert not bad, f"{path.name} uses non-public API: {sorted(set(bad))}"


def setup_cfg():
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    return cfg


def requirement_names(value):
    return [re.split(r"[<>=!\[ ;]", line.strip(), maxsplit=1)[0].lower()
            for line in value.splitlines() if line.strip() and not line.strip().startswith("#")]


IMPORT_NAME = {"scikit-learn": "sklearn", "dask": "dask", "distributed": "distributed"}
#: Requirements listed only to bound what another requirement pulls in (never imported by
#: dpstats): cbcbox holds python-mip's CBC binaries, capped below its releases with CBC debug
#: builds (setup.cfg; benchmarks/bench_install.py).
CONSTRAINS = {"cbcbox": "mip"}


def imported_top_level_modules():
    found = set()
    for path in (ROOT / "dpstats").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.add(node.module.split(".")[0])
    return found


def test_every_required_dependency_is_imported_by_the_package():
    imported = imported_top_level_modules()
    unused = [r for r in requirement_names(setup_cfg()["options"]["install_requires"])
              if IMPORT_NAME.get(r, r) not in imported and CONSTRAINS.get(r) not in imported]
    assert not unused, f"install_requires lists packages dpstats never imports: {unused}"


def test_every_extra_other_than_test_has_code_behind_it():
    # An extra is a promise that some function of the package needs it (the [dask] extra
    # also brings dask.distributed for clusters, which dpstats itself does not import).
    imported = imported_top_level_modules()
    extras = setup_cfg()["options.extras_require"]
    for extra in extras:
        if extra == "test":
            continue
        used = [r for r in requirement_names(extras[extra]) if IMPORT_NAME.get(r, r) in imported]
        assert used, f"extra [{extra}] installs nothing that dpstats imports: drop it or add the code behind it"
