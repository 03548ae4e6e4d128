"""What an annotator can see, gathered for the blind-rating tests: every answer of a full
next → submit loop (with an Idempotency-Key replay and a second submit), and the answer of
every URL pattern of the site, GET and an empty POST."""

import re

from tests.security.test_route_role_matrix import ADMIN_NAMESPACE, all_routes, content_of


def rate_everything(api, slug: str, value_for) -> tuple[list[tuple[str, bytes]], int | None, int]:
    """Loop next → submit until nothing is left, `value_for(item_payload)` giving each value.
    Returns (what was seen, the last assignment id, how many items were rated)."""
    seen: list[tuple[str, bytes]] = []
    last_assignment = None
    rated = 0
    while True:
        response = api.get(f"/api/projects/{slug}/next/")
        seen.append(("next", response.content))
        if response.status_code == 204:
            return seen, last_assignment, rated
        assert response.status_code == 200, response.content
        body = response.json()
        last_assignment = body["assignment"]
        value = value_for(body["item"]["payload"])
        url = f"/api/assignments/{last_assignment}/submit/"
        key = {"HTTP_IDEMPOTENCY_KEY": f"k-{last_assignment}"}
        submitted = api.post(url, {"value": value}, format="json", **key)
        assert submitted.status_code == 201, submitted.content
        # The answer gives back the ratings as the annotator placed them, nothing more.
        assert submitted.json()["value"] == value
        replay = api.post(url, {"value": value}, format="json", **key)
        assert replay.status_code == 201 and replay.json()["value"] == value
        again = api.post(url, {"value": value}, format="json")
        assert again.status_code in (400, 404, 409)
        seen += [("submit", submitted.content), ("replay", replay.content), ("resubmit", again.content)]
        seen.append(("progress", api.get(f"/api/projects/{slug}/progress/").content))
        rated += 1


def walk_every_route(api, client, params: dict) -> list[tuple[str, bytes]]:
    """GET and an empty POST on every URL pattern (the admin's and the login pages left
    out), path parameters filled from `params`; API routes through `api`, pages through
    `client`. Never a 500."""
    seen = []
    for route in all_routes():
        if route.name.startswith(f"{ADMIN_NAMESPACE}:") or route.name in ("logout", "login"):
            continue
        missing = set(re.findall(r"<(?:\w+:)?(\w+)>", route.regex)) - set(params)
        assert not missing, f"{route.name}: no value for {missing}"
        path = "/" + re.sub(r"<(?:\w+:)?(\w+)>", lambda m: str(params[m.group(1)]), route.regex).replace(
            "^", ""
        ).replace("$", "")
        for method in ("get", "post"):
            caller = api if route.name.startswith("api-") else client
            response = (
                getattr(caller, method)(path, {}, format="json")
                if caller is api and method == "post"
                else getattr(caller, method)(path)
            )
            assert response.status_code != 500, path
            seen.append((f"{method.upper()} {path}", content_of(response)))
    assert len(seen) > 60
    return seen
