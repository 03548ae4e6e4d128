"""The audit log records a supervisor's run of the intrinsic summary measures (whether it
measures everything again); the run an import queues by itself is not a person's action and
is not recorded, and a refused request records nothing."""

import pytest

from tests.kinds.summary.test_api import setup  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db


def test_a_measures_run_is_in_the_audit_log(setup):  # noqa: F811
    from annotation.models import AuditEntry

    sup = setup["client"]("sup")
    assert not AuditEntry.objects.filter(action="summary_measures").exists()  # the import's own run
    assert sup.post("/api/projects/he-sum/intrinsic/", {"all": "yes"}, format="json").status_code == 400
    assert setup["client"]("rev").post("/api/projects/he-sum/intrinsic/").status_code == 403
    assert not AuditEntry.objects.filter(action="summary_measures").exists()
    response = sup.post("/api/projects/he-sum/intrinsic/", {"all": True}, format="json")
    assert response.status_code == 202, response.content
    [entry] = AuditEntry.objects.filter(action="summary_measures")
    assert entry.actor.username == "sup" and entry.project.slug == "he-sum"
    assert entry.target == f"job:{response.json()['job']}" and entry.after == {"all": True}
