"""scripts/compose_smoke.py, the operator's check of a running stack, run against this suite's
own live server: every step passes on a working site, and a failed step is exit status 1
with the step's answer. Tasks run in-process here (the embedded default); against the compose
stack the same steps wait for its workers."""

import importlib.util

import pytest

from tests.conftest import ROOT

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

PASSWORD = "smoke-supervisor-pass-123"


def smoke_module():
    spec = importlib.util.spec_from_file_location("compose_smoke", ROOT / "scripts" / "compose_smoke.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def site(live_server, settings, tmp_path):
    from django.contrib.auth import get_user_model

    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.MASHOV_RELEASE_ROOT = str(tmp_path / "releases")
    get_user_model().objects.create_user(username="smoke-admin", password=PASSWORD, is_staff=True)
    return live_server.url


def test_every_step_passes_on_a_working_site(site, capsys):
    from annotation.models import Item, Project

    assert smoke_module().main([site, "--username", "smoke-admin", "--password", PASSWORD, "--timeout", "30"]) == 0
    output = capsys.readouterr().out
    assert output.splitlines()[-1] == "OK"
    assert "release 1.0 ready" in output
    project = Project.objects.get(slug__startswith="smoke-")
    assert sorted(Item.objects.filter(project=project).values_list("status", flat=True)) == ["accepted"] * 3


def test_a_failed_step_exits_1_with_the_servers_answer(site, capsys):
    assert smoke_module().main([site, "--username", "smoke-admin", "--password", "wrong"]) == 1
    error = capsys.readouterr().err
    assert error.startswith("FAILED: POST /api/auth/token/: 400")


def test_the_password_can_come_from_the_environment_and_a_page_that_is_not_the_api_fails_cleanly(
    site, capsys, monkeypatch
):
    monkeypatch.setenv("MASHOV_PASSWORD", "wrong")
    assert smoke_module().main([site, "--username", "smoke-admin"]) == 1
    assert capsys.readouterr().err.startswith("FAILED: POST /api/auth/token/: 400")
    # The site's home page answers HTML, not the API's JSON.
    assert smoke_module().main([f"{site}/p", "--username", "smoke-admin", "--password", PASSWORD]) == 1
    assert capsys.readouterr().err.startswith("FAILED:")
