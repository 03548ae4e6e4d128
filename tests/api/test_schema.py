"""The OpenAPI schema at /api/schema/ describes every route of api/urls.py, and the docs
page at /api/docs/ works under the enforced CSP (docs/api.md, docs/security.md "Pages")."""

import re

import pytest

SCHEMA_VIEWS = {"schema", "api-docs"}
HTTP_METHODS = ("get", "post", "put", "patch", "delete")


def api_routes():
    """(OpenAPI path, view class) for every route under /api/, includes followed."""
    from django.urls import URLPattern, URLResolver

    from api import urls

    def walk(patterns, prefix):
        for pattern in patterns:
            route = prefix + str(pattern.pattern)
            if isinstance(pattern, URLResolver):
                yield from walk(pattern.url_patterns, route)
            elif isinstance(pattern, URLPattern) and pattern.name not in SCHEMA_VIEWS:
                yield "/api/" + re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", route), pattern.callback.view_class

    return list(walk(urls.urlpatterns, ""))


@pytest.fixture
def schema(make_user, client_for):
    response = client_for(make_user("reader")).get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200, response.content[:500]
    assert "openapi" in response["Content-Type"]
    return response.json()


def test_routes_are_found():
    paths = [path for path, _ in api_routes()]
    assert "/api/projects/{slug}/next/" in paths
    assert "/api/assignments/{assignment_id}/submit/" in paths
    assert len(paths) >= 12


@pytest.mark.django_db
def test_schema_is_openapi_3(schema):
    assert schema["openapi"].startswith("3.")
    assert schema["info"]["title"]
    assert schema["paths"]


@pytest.mark.django_db
def test_schema_lists_every_route_and_method(schema):
    missing, missing_methods = [], []
    for path, view in api_routes():
        if path not in schema["paths"]:
            missing.append(path)
            continue
        for method in HTTP_METHODS:
            if hasattr(view, method) and method not in schema["paths"][path]:
                missing_methods.append(f"{method.upper()} {path}")
    assert not missing, f"routes missing from the OpenAPI schema: {missing}"
    assert not missing_methods, f"operations missing from the OpenAPI schema: {missing_methods}"


@pytest.mark.django_db
def test_schema_has_no_paths_that_do_not_exist(schema):
    routes = {path for path, _ in api_routes()}
    assert set(schema["paths"]) <= routes


@pytest.mark.django_db
def test_schema_documents_the_contract_details(schema):
    paths = schema["paths"]
    submit = paths["/api/assignments/{assignment_id}/submit/"]["post"]
    headers = [p["name"] for p in submit.get("parameters", []) if p.get("in") == "header"]
    assert "Idempotency-Key" in headers
    assert {"201", "400", "404", "409"} <= set(submit["responses"])
    nxt = paths["/api/projects/{slug}/next/"]["get"]
    assert {"200", "204"} <= set(nxt["responses"])
    imp = paths["/api/projects/{slug}/import/"]["post"]
    assert "multipart/form-data" in imp["requestBody"]["content"]
    assert "413" in imp["responses"]
    items = paths["/api/projects/{slug}/items/"]["get"]
    params = {p["name"] for p in items.get("parameters", [])}
    assert {"status", "split"} <= params
    status_param = next(p for p in items["parameters"] if p["name"] == "status")
    assert "open" in str(status_param["schema"])
    token = paths["/api/auth/token/"]["post"]
    assert "200" in token["responses"]
    assert "Token" in str(schema.get("components", {}).get("securitySchemes", {})) or "tokenAuth" in str(schema)


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/api/projects/", "/api/projects/{slug}/members/", "/api/projects/{slug}/items/"])
def test_paginated_lists_are_documented_as_pages(schema, path):
    """The lists answer {"count", "next", "previous", "results"} and take ?page= and
    ?page_size= (docs/api.md "General rules"); the schema must say so, not describe a bare array."""
    operation = schema["paths"][path]["get"]
    params = {p["name"] for p in operation.get("parameters", []) if p.get("in") == "query"}
    assert {"page", "page_size"} <= params, params
    body = operation["responses"]["200"]["content"]["application/json"]["schema"]
    if "$ref" in body:
        body = schema["components"]["schemas"][body["$ref"].rsplit("/", 1)[1]]
    assert body.get("type") == "object", body
    assert {"count", "results"} <= set(body.get("properties", {})), body


@pytest.mark.django_db
def test_schema_yaml_by_default(make_user, client_for):
    response = client_for(make_user("reader")).get("/api/schema/")
    assert response.status_code == 200
    assert response.content.startswith(b"openapi: 3.")


@pytest.mark.django_db
def test_docs_page_renders_without_inline_script(make_user, client_for):
    client = client_for(make_user("reader"))
    response = client.get("/api/docs/")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/html")
    html = response.content.decode()
    scripts = re.findall(r"<script\b([^>]*)>(.*?)</script>", html, re.S | re.I)
    assert scripts, "the docs page loads Swagger UI"
    for attributes, content in scripts:
        assert "src=" in attributes, attributes
        assert not content.strip(), f"inline script body: {content[:200]!r}"
    assert not re.search(r"\son[a-z]+\s*=", html, re.I), "inline event handler"
    csp = response["Content-Security-Policy"]
    assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
    # no CDN: every script comes from this site
    for attributes, _ in scripts:
        src = re.search(r'src="([^"]+)"', attributes).group(1)
        assert src.startswith("/"), src


@pytest.mark.django_db
def test_docs_init_script_is_served_as_javascript(make_user, client_for):
    client = client_for(make_user("reader"))
    html = client.get("/api/docs/").content.decode()
    own = [src for src in re.findall(r'<script[^>]*src="([^"]+)"', html) if src.startswith("/api/")]
    assert own, "the Swagger UI init script is a separate file served by the API"
    for src in own:
        response = client.get(src)
        assert response.status_code == 200
        assert "javascript" in response["Content-Type"]
        assert b"SwaggerUIBundle" in response.content


@pytest.mark.django_db
def test_docs_page_has_no_inline_style_blocked_by_csp(make_user, client_for):
    """style-src 'self' blocks inline <style> blocks and style attributes: a page that relies
    on them renders differently from what it means to (and fills the console with errors)."""
    response = client_for(make_user("reader")).get("/api/docs/")
    csp = response["Content-Security-Policy"]
    style_src = re.search(r"style-src ([^;]*)", csp)
    policy = style_src.group(1) if style_src else ""
    if "'unsafe-inline'" in policy:
        pytest.fail("style-src must not allow 'unsafe-inline'")
    html = response.content.decode()
    inline_styles = [body for body in re.findall(r"<style\b[^>]*>(.*?)</style>", html, re.S | re.I) if body.strip()]
    assert not inline_styles, f"inline <style> blocked by CSP: {inline_styles[0][:120]!r}"
