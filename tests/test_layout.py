"""The layout's rules, read from the source (no database): the core never imports a
particular kind, arrows between the top-level packages point one way (config -> api ->
annotation), and no modules import each other in a circle. Function-level imports
count: a lazy import is still an arrow a reader has to follow. And the documentation the
code refers to is docs/, by path and existing section."""

import ast
import re
import subprocess
from pathlib import Path

import pytest

from tests.kinds_installed import all_kind_codes, kinds_setting_without, reload_urlconf

ROOT = Path(__file__).resolve().parent.parent
KINDS_PACKAGE = "annotation.kinds"
# Modules of kinds/ that belong to no kind: the interface and the list.
KINDS_CORE = {
    "annotation.kinds",
    "annotation.kinds.base",
    "annotation.kinds.settings",
    "annotation.kinds.rating",
    "annotation.kinds.registry",
}


def _module_files() -> dict[str, Path]:
    modules = {}
    for top in ("annotation", "api", "config"):
        for path in (ROOT / top).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            modules[name] = path
    return modules


MODULES = _module_files()


def _imports_of(name: str, path: Path) -> set[str]:
    """The project modules `name` imports anywhere in its source ("from a import b" counts as
    a.b when that is a module, else as a)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:
                candidate = f"{base}.{alias.name}"
                found.add(candidate if candidate in MODULES else base)
    return {module for module in found if module in MODULES and module != name}


GRAPH = {name: _imports_of(name, path) for name, path in MODULES.items()}


def _named_by_string(path: Path) -> set[str]:
    """The project modules a file names in a string literal: Django and DRF load URLconfs,
    settings' classes and views that way (`include("api.urls")`), and such a name is an
    arrow as much as an import is. A dotted name counts as its longest module prefix; a bare
    word ("config" as a template variable) is no name of a module."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and re.fullmatch(r"\w+(\.\w+)+", node.value):
            parts = node.value.split(".")
            for end in range(len(parts), 1, -1):
                if ".".join(parts[:end]) in MODULES:
                    found.add(".".join(parts[:end]))
                    break
    return found


# Arrows between the top-level packages: the settings and the root URLconf (config) name
# both front doors; the REST API (api) imports the core; the core (annotation, with the
# kinds' own endpoints and the REST plumbing they share with api/, annotation/rest/)
# imports neither.
PACKAGE_ARROWS = {("config", "api"), ("config", "annotation"), ("api", "annotation")}


def _package_arrows(graph: dict[str, set[str]]) -> dict[tuple[str, str], list[str]]:
    """Arrows between top-level packages, each with the module-level arrows that make it."""
    arrows: dict[tuple[str, str], list[str]] = {}
    for module, targets in graph.items():
        for target in targets:
            pair = (module.partition(".")[0], target.partition(".")[0])
            if pair[0] != pair[1]:
                arrows.setdefault(pair, []).append(f"{module} -> {target}")
    return {pair: sorted(found) for pair, found in arrows.items()}


def _kind_of(module: str) -> str | None:
    """The kind package a module belongs to (annotation.kinds.<kind>), None for the core."""
    if not module.startswith(KINDS_PACKAGE + ".") or module in KINDS_CORE:
        return None
    return ".".join(module.split(".")[:3])


def _circles() -> list[frozenset[str]]:
    """Strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles = []
    for start in GRAPH:
        if start in index:
            continue
        work = [(start, iter(sorted(GRAPH[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(GRAPH[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    circles.append(frozenset(component))
    return circles


def test_the_core_imports_no_particular_kind():
    offenders = {
        module: sorted(target for target in GRAPH[module] if _kind_of(target))
        for module in GRAPH
        if _kind_of(module) is None
    }
    assert {module: targets for module, targets in offenders.items() if targets} == {}


def test_no_modules_import_each_other_in_a_circle():
    assert _circles() == []


def test_arrows_between_packages_point_one_way():
    """The core never imports the REST API (at module or function level, or by a dotted
    name in a string), so the kinds' endpoints share api/'s plumbing through annotation/rest/."""
    graph = {name: GRAPH[name] | _named_by_string(path) for name, path in MODULES.items()}
    arrows = _package_arrows(graph)
    assert {pair: found for pair, found in arrows.items() if pair not in PACKAGE_ARROWS} == {}
    assert ("api", "annotation") in arrows  # the reader sees arrows between packages at all


def test_the_package_check_sees_a_backward_arrow():
    """The check itself: one lazy import from the core into api/ is an arrow it reports."""
    graph = {"annotation.kinds.qa.api": {"api.views", "annotation.rest.schema"}, "api.urls": {"annotation.views"}}
    assert _package_arrows(graph) == {
        ("annotation", "api"): ["annotation.kinds.qa.api -> api.views"],
        ("api", "annotation"): ["api.urls -> annotation.views"],
    }
    assert "api.urls" in _named_by_string(MODULES["config.urls"])  # include("api.urls")


# Where a request lands (docs/architecture.md "Module names"): pages in `views` (a module or
# a package of modules by area), the core's DRF views in api/views/, routes in one `urls`
# per package; a kind's are named by the kind interface (pages, api, urls: one urls.py holds
# both its pages' routes and its API's).
_ROUTING_NAME = re.compile(r"(^|_)(views|pages|urls)(_|$)")
_KIND_ROUTING = {"pages", "api", "urls"}


def _misnamed_routing_modules(modules) -> list[str]:
    misnamed = []
    for module in modules:
        last = module.rpartition(".")[2]
        if _kind_of(module) is not None and module.count(".") == 3:
            if last not in _KIND_ROUTING and _ROUTING_NAME.search(last):
                misnamed.append(module)
        elif _ROUTING_NAME.search(last) and last not in {"views", "urls"}:
            misnamed.append(module)
    return sorted(misnamed)


def test_pages_views_and_routes_follow_one_naming_scheme():
    assert _misnamed_routing_modules(MODULES) == []


def test_the_naming_check_sees_the_old_schemes():
    old = ["annotation.views_audit", "api.bias_urls", "annotation.release.bias_pages", "api.comfort_views"]
    old += ["annotation.kinds.qa.api_urls"]
    ok = ["annotation.views.audit", "api.urls", "annotation.kinds.qa.urls", "annotation.kinds.qa.pages"]
    assert _misnamed_routing_modules(old + ok) == sorted(old)


def test_the_graph_sees_lazy_and_relative_imports():
    """The reader itself: a function-level import and a relative import are both arrows."""
    assert "annotation.services.imports" in GRAPH["annotation.tasks"]  # inside _handlers()
    assert "annotation.kinds.base" in GRAPH["annotation.kinds.registry"]  # from .base import
    assert _kind_of("annotation.kinds.qa.formats") == "annotation.kinds.qa"
    assert _kind_of("annotation.kinds.registry") is None


# The project's own documentation is docs/. A design, API or style document is named by its
# path there (`docs/api.md "Results"`), never as a bare file name or a path outside the
# repository; inside docs/ a page may name another page of docs/ by its bare file name.
DOCS = ROOT / "docs"
_DOC_NAME = re.compile(r"(?i)(?<![\w.])((?:[\w.-]+/)*)((?:api|design|style)\.md)\b")
_DOC_SECTION = re.compile(r"\bdocs/([\w-]+\.md)\s+\"([^\"\n]+)\"")


def _tracked_texts():
    """(path, text) of every file git tracks, binary files left out."""
    try:
        listing = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: the tracked files cannot be listed")
    for name in filter(None, listing.decode("utf-8").split("\0")):
        data = (ROOT / name).read_bytes() if (ROOT / name).is_file() else b""
        if b"\0" in data:
            continue
        yield name, data.decode("utf-8", errors="replace")


def test_design_api_and_style_documents_are_named_by_their_docs_path():
    offenders = []
    for name, text in _tracked_texts():
        for match in _DOC_NAME.finditer(text):
            prefix, file = match.groups()
            in_docs = name.startswith("docs/") and prefix == ""
            if not ((prefix == "docs/" or in_docs) and (DOCS / file).is_file()):
                line = text.count("\n", 0, match.start()) + 1
                offenders.append(f"{name}:{line}: {match.group(0)}")
    assert offenders == [], "name the page of docs/ instead (docs/api.md, docs/architecture.md, docs/conventions.md, …)"


def test_references_to_a_section_of_docs_name_one_that_exists():
    """`docs/<page>.md "<Section>"` names a page of docs/ and a heading on it."""
    headings = {
        page.name: {
            line.lstrip("#").strip() for line in page.read_text(encoding="utf-8").splitlines() if line.startswith("#")
        }
        for page in DOCS.glob("*.md")
    }
    missing = [
        f'{name}: docs/{page} "{section}"'
        for name, text in _tracked_texts()
        for page, section in _DOC_SECTION.findall(text)
        if section not in headings.get(page, ())
    ]
    assert missing == []


# --- the kinds are plug-ins ----------------------------------------------------------------------
# Outside a kind's own folders (annotation/kinds/<kind>/, templates/<kind>/, static/<kind>/)
# nothing names a kind: no kind code as a string and no URL name a kind defines. The core
# reaches kinds through the registry and the hooks of Kind; which kinds exist is a setting.


def _kind_folders() -> set[str]:
    """The packages under annotation/kinds/: one per kind, and what kinds of one paper share."""
    return {path.name for path in (ROOT / "annotation" / "kinds").iterdir() if (path / "__init__.py").is_file()}


def _kind_codes() -> set[str]:
    from annotation.kinds.registry import available_kinds

    return set(available_kinds())


def _kind_url_names() -> set[str]:
    """The URL names the kinds' own URL modules define."""
    from django.utils.module_loading import import_module

    from annotation.kinds.registry import api_url_patterns, url_modules

    return {
        pattern.name
        for patterns in (*(import_module(module).urlpatterns for module in url_modules()), *api_url_patterns())
        for pattern in patterns
        if pattern.name
    }


def _core_python_files() -> list[Path]:
    folders = _kind_folders()
    return [
        path
        for name, path in MODULES.items()
        if not (name.startswith(KINDS_PACKAGE + ".") and name.split(".")[2] in folders)
    ]


def _core_templates() -> list[Path]:
    folders = _kind_folders()
    return [
        path
        for path in (ROOT / "templates").rglob("*.html")
        if path.relative_to(ROOT / "templates").parts[0] not in folders
    ]


def _string_constants(path: Path) -> list[tuple[int, str]]:
    return [
        (node.lineno, node.value)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    ]


# Where a core module may use a word that is also a kind's URL name for something else (a
# model's reverse accessor is not a URL).
_NOT_URL_KEYWORDS = {"related_name", "related_query_name"}


def _url_name_uses(path: Path, names: set[str]) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    exempt = {
        id(keyword.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        for keyword in node.keywords
        if keyword.arg in _NOT_URL_KEYWORDS
    }
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and node.value in names and id(node) not in exempt
    ]


def test_the_core_names_no_kind_code():
    codes = _kind_codes()
    assert {"qa_authoring", "nli_relabel", "label_test"} <= codes  # the check reads the real list
    offenders = [
        f"{path.relative_to(ROOT)}:{line}: {value!r}"
        for path in _core_python_files()
        for line, value in _string_constants(path)
        if value in codes
    ]
    quoted = re.compile(r"""["'](%s)["']""" % "|".join(map(re.escape, sorted(codes))))
    for path in _core_templates():
        text = path.read_text(encoding="utf-8")
        offenders += [
            f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(0)}"
            for m in quoted.finditer(text)
        ]
    assert offenders == [], "ask the kind (a hook on Kind, the registry) instead of naming it"


def test_the_core_uses_no_url_name_of_a_kind():
    names = _kind_url_names()
    assert {"review-qa", "lchaim-results", "api-revisions"} <= names  # the check reads the real modules
    offenders = [
        f"{path.relative_to(ROOT)}:{line}: {value!r}"
        for path in _core_python_files()
        for line, value in _url_name_uses(path, names)
    ]
    url_tag = re.compile(r"""\{%\s*url\s+["']([\w-]+)["']""")
    for path in _core_templates():
        text = path.read_text(encoding="utf-8")
        offenders += [
            f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(1)}"
            for m in url_tag.finditer(text)
            if m.group(1) in names
        ]
    assert offenders == [], "link a kind's pages through Kind.project_links, not by URL name"


def test_the_checks_see_a_kind_code_and_a_kind_url_name(tmp_path):
    """The readers themselves: a kind code and a kind's URL name in core-like files are found."""
    module = tmp_path / "m.py"
    module.write_text('KIND = "qa_authoring"\nreverse("review-qa")\nmodels.ForeignKey(X, related_name="revisions")\n')
    assert (1, "qa_authoring") in _string_constants(module)
    assert _url_name_uses(module, {"review-qa", "revisions"}) == [(2, "review-qa")]


@pytest.fixture
def installed_without(settings):
    """Install every kind but one (`installed_without(name)`), URLconf included, and give
    the URL names that left with it; the full list and its URLconf come back afterwards."""
    full = list(settings.MASHOV_KINDS)

    def leave_out(name: str) -> set[str]:
        before = _kind_url_names()
        settings.MASHOV_KINDS = kinds_setting_without(name)
        reload_urlconf()
        return before - _kind_url_names()

    yield leave_out
    settings.MASHOV_KINDS = full
    reload_urlconf()


@pytest.mark.django_db
@pytest.mark.parametrize("missing", all_kind_codes())
def test_the_core_pages_serve_with_any_one_kind_left_out(missing, installed_without, make_user, client_for, client):
    """With one kind not installed the product starts, builds its URLs and schema, and serves
    its core pages (home, project, console, members, quality, audit, feedback) and the
    project API for a project of another kind; the missing kind is refused and unrouted."""
    from django.urls import NoReverseMatch, reverse

    from annotation.kinds.registry import available_kinds
    from annotation.models import Membership
    from annotation.services.projects import project_create

    gone = installed_without(missing)
    assert missing not in available_kinds()
    for name in gone:
        with pytest.raises(NoReverseMatch):
            reverse(name, kwargs={"slug": "left"})
    other = available_kinds()[0]
    admin = make_user("root", staff=True)
    annotator = make_user("ann")
    project = project_create(actor=admin, slug="left", name="Left out", kind=other, language="he")
    Membership.objects.create(project=project, user=annotator, role="annotator", status="active")
    client.force_login(admin)
    pages = [
        "/",
        "/p/left/",
        "/p/left/annotators/",
        "/p/left/adjudication/",
        "/p/left/audit/",
        "/console/projects/new/",
        "/console/users/",
        "/console/p/left/settings/",
        "/console/p/left/items/",
        "/console/p/left/preview/",
        "/feedback/",
    ]
    for url in pages:
        response = client.get(url)
        assert response.status_code == 200, (url, response.status_code)
    assert client.get("/p/left/dashboard/").status_code in (200, 404)
    api = client_for(admin)
    listing = api.get("/api/projects/")
    assert listing.status_code == 200 and "left" in str(listing.json())
    assert api.get("/api/projects/left/").json()["kind"] == other
    assert api.get("/api/me/feedback/").status_code == 200
    schema = api.get("/api/schema/", HTTP_ACCEPT="application/json")
    assert schema.status_code == 200
    assert f"- {missing}\n" not in schema.content.decode()
    refused = api.post(
        "/api/projects/", {"slug": "new-one", "name": "New", "kind": missing, "language": "he"}, format="json"
    )
    assert refused.status_code == 400 and refused.json()["errors"][0]["field"] == "kind"
    client.force_login(annotator)
    assert client.get("/").status_code == 200
    assert client.get("/feedback/").status_code == 200


# --- one writer of an item's outcome -------------------------------------------------------
# The decision ledger owns an item's status and gold (docs/decisions.md): no other module
# assigns them. Migrations (history) and tests are outside the scan.
OUTCOME_WRITER = "annotation.services.decisions"
OUTCOME_FIELDS = {"status", "gold_label"}


def _root_name(node: ast.AST) -> str:
    """The name a chain like `Item.objects.filter(...).update` starts from."""
    while True:
        if isinstance(node, ast.Attribute):
            node = node.value
        elif isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, ast.Subscript):
            node = node.value
        else:
            return node.id if isinstance(node, ast.Name) else ""


def _is_item(node: ast.AST) -> bool:
    """Whether an expression reads as an item (or items): `item`, `pair.item_b`,
    `Item.objects...`, `items[pk]` — the ledger is the only module that names them so."""
    text = ast.unparse(node)
    return "item" in _root_name(node).lower() or bool(re.search(r"(^|\.)item(s|_[ab])?\b", text, re.I))


def _strings(node: ast.AST | None) -> set[str]:
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return {elt.value for elt in node.elts if isinstance(elt, ast.Constant) and isinstance(elt.value, str)}
    return set()


def _outcome_writes(source: str) -> list[tuple[int, str]]:
    """(line, code) of every write of an item's status or gold in `source`: assignments
    to `<item>.status` / `.gold_label`, `update(status=...)`/`create(...)` on items,
    `save(update_fields=[..."status"...])` and `bulk_update(..., ["status"])` on items,
    and `Item(status=..., gold_label=...)`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        targets = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        for target in targets:
            for leaf in target.elts if isinstance(target, ast.Tuple) else [target]:
                if isinstance(leaf, ast.Attribute) and (
                    leaf.attr == "gold_label" or (leaf.attr == "status" and _is_item(leaf.value))
                ):
                    found.append((node.lineno, ast.unparse(node)))
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        keywords = {keyword.arg for keyword in node.keywords}
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        receiver = func.value if isinstance(func, ast.Attribute) else func
        if name == "Item" and keywords & OUTCOME_FIELDS:
            found.append((node.lineno, ast.unparse(node)))
        elif name in ("update", "create", "update_or_create", "get_or_create", "bulk_create") and (
            "gold_label" in keywords or ("status" in keywords and _root_name(receiver) == "Item")
        ):
            found.append((node.lineno, ast.unparse(node)))
        elif name == "save" and _is_item(receiver):
            fields = next((_strings(k.value) for k in node.keywords if k.arg == "update_fields"), set())
            if fields & OUTCOME_FIELDS:
                found.append((node.lineno, ast.unparse(node)))
        elif name == "bulk_update" and _root_name(receiver) == "Item":
            fields = _strings(node.args[1]) if len(node.args) > 1 else set()
            fields |= next((_strings(k.value) for k in node.keywords if k.arg == "fields"), set())
            if fields & OUTCOME_FIELDS:
                found.append((node.lineno, ast.unparse(node)))
    return found


def test_only_the_decision_ledger_writes_an_items_status_or_gold():
    writes = [
        f"{name}:{line}: {code}"
        for name, path in sorted(MODULES.items())
        if name != OUTCOME_WRITER
        for line, code in _outcome_writes(path.read_text(encoding="utf-8"))
    ]
    assert writes == [], "write an item's status or gold through annotation.services.decisions:\n" + "\n".join(writes)


@pytest.mark.parametrize(
    "code",
    [
        "item.status = Item.Status.REMOVED",
        "item.computed, item.flags, item.status = a, b, c",
        "pair.item_b.status = 'removed'",
        "row.gold_label = 'e'",
        "Item.objects.filter(pk=1).update(status='open')",
        "Item.objects.filter(pk__in=ids).update(gold_label='e')",
        "item.save(update_fields=['computed', 'status'])",
        "Item.objects.bulk_update(changed, ['computed', 'flags', 'status'], batch_size=1000)",
        "Item(project=p, status='accepted', gold_label='e')",
        "Item.objects.create(project=p, status='accepted')",
    ],
)
def test_the_outcome_check_sees_a_write(code):
    assert _outcome_writes(code)


@pytest.mark.parametrize(
    "code",
    [
        "job.status = Job.Status.RUNNING",
        "membership.status = changes['status']",
        "Assignment.objects.filter(item=item).update(status='expired')",
        "delivery.save(update_fields=['status', 'last_error'])",
        "item.save(update_fields=['computed'])",
        "Item.objects.filter(status='open')",
    ],
)
def test_the_outcome_check_passes_over_other_states(code):
    assert _outcome_writes(code) == []
