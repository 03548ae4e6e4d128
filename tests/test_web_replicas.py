"""Web replicas behind one entry point, as docker-compose.yml runs them: two gunicorn web
processes (production settings) behind a round-robin proxy that, like the compose file's
nginx, sends each request to the next web and passes X-Forwarded-For and X-Forwarded-Proto.
One browser session goes back and forth between the two: logged in through one web, it is
logged in on the other; a form read from one is posted (CSRF-protected) to the other; the
message that post leaves is shown by the first; a logout on one ends the session on both."""

import http.client
import itertools
import re
import subprocess
import sys
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.conftest import ROOT
from tests.test_scale_out import Web, collect_static, production_env

pytestmark = [pytest.mark.postgres]

PASSWORD = "replica-pass-word-123"
# Hop-by-hop headers (RFC 9110 7.6.1) are the proxy's own, never passed on.
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "proxy-connection"}


class RoundRobinProxy:
    """An HTTP entry point on 127.0.0.1 that sends each request to the next of `backends`
    in turn, and records which one answered it."""

    def __init__(self, backends: list[Web]):
        self.backends = backends
        self.served_by: list[int] = []
        turn = itertools.cycle(range(len(backends)))
        lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def forward(self) -> None:
                with lock:
                    index = next(turn)
                    proxy.served_by.append(index)
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
                forwarded = ", ".join(filter(None, [self.headers.get("X-Forwarded-For"), self.client_address[0]]))
                headers.update({"X-Forwarded-For": forwarded, "X-Forwarded-Proto": "http"})
                upstream = http.client.HTTPConnection("127.0.0.1", backends[index].port, timeout=60)
                try:
                    upstream.request(self.command, self.path, body=body or None, headers=headers)
                    response = upstream.getresponse()
                    content = response.read()
                    self.send_response(response.status, response.reason)
                    for name, value in response.getheaders():  # every Set-Cookie, each on its own
                        if name.lower() not in HOP_BY_HOP | {"content-length"}:
                            self.send_header(name, value)
                    self.send_header("Content-Length", str(len(content)))
                    self.end_headers()
                    self.wfile.write(content)
                finally:
                    upstream.close()

            do_GET = do_POST = do_HEAD = forward

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def logs(self) -> str:
        """The end of each web's log, for a failure's message."""
        return "\n".join(web.log_path.read_text()[-3000:] for web in self.backends)

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def entry_point(transactional_db):
    """Two gunicorn web processes on the test database behind one round-robin entry point."""
    suffix = uuid.uuid4().hex[:8]
    env = production_env(TRUSTED_PROXIES="127.0.0.1")
    collect_static(env)
    webs: list[Web] = []
    proxy = None
    try:
        for index in range(2):
            webs.append(Web(env, ROOT / "tests" / f".web-replica-{suffix}-{index}.log"))
        for web in webs:
            web.wait_ready()
        proxy = RoundRobinProxy(webs)
        yield proxy
    finally:
        if proxy is not None:
            proxy.stop()
        for web in webs:
            web.stop()


def csrf_token(html: str) -> str:
    match = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html)
    assert match, html[:2000]
    return match.group(1)


def test_one_session_is_served_by_every_web_behind_the_entry_point(entry_point, make_user):
    import requests
    from django.contrib.auth.hashers import PBKDF2PasswordHasher

    from annotation.models import Membership
    from annotation.services.projects import project_create

    supervisor = make_user("replica-supervisor", staff=True)
    # Hashed as production's first hasher does: the test settings' fast one is not in its list.
    hasher = PBKDF2PasswordHasher()
    supervisor.password = hasher.encode(PASSWORD, hasher.salt())
    supervisor.save(update_fields=["password"])
    project = project_create(actor=supervisor, slug="replicas", name="Replicas", kind="nli_relabel", language="fa")
    newcomer = make_user("replica-newcomer")
    page = f"{entry_point.url}/p/{project.slug}/"
    browser = requests.Session()

    def send(method: str, url: str, **kwargs) -> requests.Response:
        return browser.request(method, url, allow_redirects=False, timeout=60, **kwargs)

    # The login form from one web, the login posted to the other (the stylesheet between).
    form = send("GET", f"{entry_point.url}/login/")
    assert form.status_code == 200, entry_point.logs()
    # Static files come through the entry point too, from whitenoise, cached for good.
    stylesheet = re.search(r'href="(/static/[^"]+\.css)"', form.text)
    assert stylesheet, form.text[:2000]
    static = send("GET", f"{entry_point.url}{stylesheet.group(1)}")
    assert static.status_code == 200 and "max-age=315360000" in static.headers["Cache-Control"]
    login = send(
        "POST",
        f"{entry_point.url}/login/",
        data={"username": supervisor.username, "password": PASSWORD, "csrfmiddlewaretoken": csrf_token(form.text)},
    )
    assert login.status_code == 302, login.text[:2000]
    assert "sessionid" in browser.cookies
    # The session opened by the second web is known to the first.
    project_page = send("GET", page)
    assert project_page.status_code == 200, project_page.headers.get("Location")

    # Without the form's token the other web refuses the post: the check is on.
    refused = send("POST", f"{page}members/add/", data={"username": newcomer.username, "role": "annotator"})
    assert refused.status_code == 403
    assert not Membership.objects.filter(project=project, user=newcomer).exists()

    # The form read from one web, posted to the other with its CSRF token.
    token = csrf_token(send("GET", page).text)
    added = send(
        "POST",
        f"{page}members/add/",
        data={"username": newcomer.username, "role": "annotator", "status": "active", "csrfmiddlewaretoken": token},
    )
    assert added.status_code == 302, added.text[:2000]
    assert Membership.objects.filter(project=project, user=newcomer, role="annotator", status="active").exists()
    # The message the post left is shown once, by the other web.
    shown = send("GET", page)
    assert shown.status_code == 200
    assert 'role="status"' in shown.text and newcomer.username in shown.text
    assert 'role="status"' not in send("GET", page).text

    # A logout on one web ends the session on every web.
    token = csrf_token(send("GET", page).text)
    logout = send("POST", f"{entry_point.url}/logout/", data={"csrfmiddlewaretoken": token})
    assert logout.status_code == 302
    browser.cookies.set("sessionid", login.cookies["sessionid"])  # the old cookie, replayed
    for _ in range(2):
        assert send("GET", page).status_code == 302

    # Each step alternated between the two webs: a state held by one web alone would have failed.
    served = entry_point.served_by
    assert served == [index % 2 for index in range(len(served))]
    print(f"\n{len(served)} requests of one session over two webs behind one entry point")
