"""Which annotations of a question project go to review (HeQ §3.3: every one of trial and
untrusted members, a keyed random sample of trusted ones). The review and feedback loop
itself is the core's (annotation/services/reviews.py)."""

from annotation.kinds.settings import keyed_draw

QUESTION_KINDS = ("qa_authoring",)


def review_sampled(*, secret: str, seed: int, key: str, rate: float) -> bool:
    """Whether a trusted member's annotation is drawn for review (HeQ §3.3: experienced
    annotators' work was randomly selected for feedback): the project's keyed draw of `key`
    (`keyed_draw`: HMAC-SHA256 keyed by the project's `draw_secret` and the `review_seed`
    setting) read as a uniform number in [0, 1), drawn when below `rate`. The server
    replays the routing of a project exactly; an annotator, who can know every name in the
    key but not the secret, cannot predict it; over many keys the share drawn is `rate`.

    >>> [review_sampled(secret="00" * 32, seed=13, key="a", rate=r) for r in (0.0, 1.0)]
    [False, True]
    """
    return keyed_draw(secret, seed, key) / 2**64 < rate


def review_key(project_slug: str, item_external_id: str, username: str, round_number: int) -> str:
    """What the review draw of one annotation is keyed over: names that stay the same in
    any copy of the database (row ids do not)."""
    return f"{project_slug}\x00{item_external_id}\x00{username}\x00{round_number}"
