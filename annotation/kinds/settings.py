"""The protocol settings every kind shares, their defaults, help texts and checks: the common
settings, the aggregation and adaptive-overlap settings of the kinds that vote or rate, the
ranges a setting must lie in, and the keyed draw the seed settings feed."""

import hashlib
import hmac

from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from annotation.errors import InvalidInput
from annotation.wording import join_list

# Settings every kind understands.
COMMON_SETTINGS = {
    "claim_ttl": 30 * 60,  # seconds an open claim holds its slot at most
    # Seconds a claim holds its slot without a sign of the annotator (the page's heartbeat on
    # input, a draft save, opening the page again): an open page nobody works on gives the
    # item back to others after this, while work in progress keeps it up to claim_ttl.
    "idle_release_seconds": 180,
    # Whether matching (overlap, EM/F1/TLNLS) counts Arabic yeh/kaf as their Persian forms
    # (annotation.metrics.text.fold_for_matching). The default here is only the type: the
    # real default depends on the project's language (`language_defaults`).
    "fold_letter_variants": False,
    # An annotator whose Cohen's kappa against the consensus is below this is flagged on
    # the quality page (0.4: below "moderate" on Landis & Koch's 1977 scale).
    "quality_flag_below": 0.4,
}
# Kappa lies in [-1, 1]; a threshold outside it would flag everyone or no one.
QUALITY_FLAG_RANGE = (-1.0, 1.0)


def language_defaults(language: str | None) -> dict:
    """Defaults of common settings that depend on the project's language. Persian text
    mixes the Arabic and Persian forms of yeh and kaf (FarsTail's data does; docs/text.md "Matching"),
    so Persian projects fold them by default; in other languages they are other letters."""
    return {"fold_letter_variants": language == "fa"}


# Settings of label aggregation and adaptive overlap (docs/api.md "Aggregation, annotator
# quality, adjudication"), for the kinds whose vote is one label of a closed set: which
# method decides gold, and how many votes an item gets (off while overlap_min is unset).
AGGREGATION_SETTINGS = {"aggregation": "k_of_n", "overlap_min": None, "overlap_max": None, "confidence_target": None}
# The rating kinds' adaptive overlap: one more rater while one candidate's ratings differ
# by more than `spread` points.
RATING_OVERLAP_SETTINGS = {"overlap_min": None, "overlap_max": None, "spread": None}
# Settings that are unset (None) by default, with the type they take when set.
OPTIONAL_SETTING_TYPES = {"overlap_min": int, "overlap_max": int, "confidence_target": float, "spread": float}
# Most votes adaptive overlap may ask of one item.
OVERLAP_MAX_LIMIT = 50


def check_overlap_settings(settings: dict) -> None:
    """overlap_min and overlap_max set together, 1 <= overlap_min <= overlap_max <= 50;
    confidence_target in [0, 1]; spread at least 0. Each a 400 naming the setting."""
    low, high = settings.get("overlap_min"), settings.get("overlap_max")
    if low is None and high is not None:
        raise InvalidInput(
            gettext("is required when the most votes are set (adaptive overlap is off while it is unset)"),
            field="settings.overlap_min",
        )
    if low is not None:
        if not 1 <= low <= OVERLAP_MAX_LIMIT:
            raise InvalidInput(between(1, OVERLAP_MAX_LIMIT), field="settings.overlap_min")
        if high is None:
            raise InvalidInput(gettext("is required when the first votes are set"), field="settings.overlap_max")
        if not low <= high <= OVERLAP_MAX_LIMIT:
            raise InvalidInput(
                gettext("must be between the first votes and %(high)s") % {"high": OVERLAP_MAX_LIMIT},
                field="settings.overlap_max",
            )
    target = settings.get("confidence_target")
    if target is not None and not 0.0 <= target <= 1.0:
        raise InvalidInput(between(0, 1), field="settings.confidence_target")
    spread = settings.get("spread")
    if spread is not None and not 0.0 <= spread <= 100.0:
        raise InvalidInput(between(0, 100), field="settings.spread")


def check_aggregation_settings(settings: dict) -> None:
    """`aggregation` one of the methods, then the overlap settings."""
    from annotation.metrics.aggregation import METHODS

    if settings["aggregation"] not in METHODS:
        raise InvalidInput(
            gettext("must be one of %(choices)s")
            % {"choices": join_list(str(AGGREGATION_CHOICES[m]) for m in METHODS)},
            field="settings.aggregation",
        )
    check_overlap_settings(settings)


# The model in the loop (docs/kinds.md "Model in the loop"), for the kinds whose vote is one
# label of a closed set: the order the engine hands items out in, and how many new decisions
# make the built-in model train again (0: only when a supervisor asks), and whether annotators
# see the latest prediction set's label as a suggestion (off: a suggestion anchors a person's
# judgement, so it is the supervisor's choice, and refused where the protocol is blind).
MODEL_SETTINGS = {"order": "sequential", "retrain_every": 0, "suggestions": False}
ORDERS = ("sequential", "random", "uncertainty", "disagreement")
RETRAIN_EVERY_RANGE = (0, 1_000_000)


def check_model_settings(settings: dict) -> None:
    """`order` one of ORDERS, `retrain_every` within RETRAIN_EVERY_RANGE; each a 400 naming
    the setting. Settings the kind does not have are left alone."""
    if "order" in settings and settings["order"] not in ORDERS:
        raise InvalidInput(
            gettext("must be one of %(choices)s") % {"choices": join_list(ORDERS)}, field="settings.order"
        )
    if "retrain_every" in settings:
        check_range(settings, "retrain_every", *RETRAIN_EVERY_RANGE)


# A claim longer than a week would hold an item from everyone else for good; and an
# expiry beyond year 9999 cannot be stored at all.
CLAIM_TTL_RANGE = (10, 7 * 24 * 3600)
# Below a few seconds a claim would lapse between two heartbeats of an annotator at work.
IDLE_RELEASE_RANGE = (5, 7 * 24 * 3600)
# Seeds are free, but within 64 bits: a longer number is a mistake, not a seed.
SEED_RANGE = (-(2**63), 2**63 - 1)


def between(low, high) -> str:
    """ "must be between low and high", in the request's language."""
    return gettext("must be between %(low)s and %(high)s") % {"low": low, "high": high}


def type_wanted(wanted: type) -> str:
    """What a setting of type `wanted` must be, in the request's language."""
    return {
        bool: gettext("must be yes or no"),
        int: gettext("must be a whole number"),
        float: gettext("must be a number"),
        str: gettext("must be text"),
        list: gettext("must be a list"),
        dict: gettext("must be a set of named values"),
    }.get(wanted, gettext("has the wrong type"))


def check_range(settings: dict, name: str, low, high) -> None:
    """A numeric setting within [low, high], else a 400 naming it."""
    if not low <= settings[name] <= high:
        raise InvalidInput(between(low, high), field=f"settings.{name}")


def keyed_draw(secret: str, seed: int, key: str) -> int:
    """A project's random draw of `key`, as a 64-bit integer: HMAC-SHA256 keyed by the
    project's `draw_secret` together with the `seed` setting, over `key`. Members may know
    the seed and every name in `key`; without the secret, which never leaves the server,
    they cannot work the draw out. The server replays it exactly (same secret, seed, key).

    >>> keyed_draw("00" * 32, 13, "a") == keyed_draw("00" * 32, 13, "a") != keyed_draw("00" * 32, 14, "a")
    True
    """
    digest = hmac.new(f"{secret}\x00{seed}".encode(), key.encode(), hashlib.sha256).digest()
    return int.from_bytes(digest[:8], "big")


# What each common setting means, for the console's settings forms.
COMMON_SETTINGS_HELP = {
    "claim_ttl": _("Seconds an annotator's claim on an item lasts before the item goes back to others."),
    "idle_release_seconds": _(
        "Seconds an open page without input keeps its item; typing or clicking renews the claim, up to the claim's time limit."
    ),
    "fold_letter_variants": _(
        "Count Arabic yeh and kaf as their Persian forms when texts are matched (on by default for Persian)."
    ),
    "quality_flag_below": _(
        "Annotators whose kappa against the consensus is below this are flagged on the quality page (-1 to 1)."
    ),
    "aggregation": _("Which method makes gold from the votes."),
    "overlap_min": _("Adaptive overlap: votes every item gets first (empty: off, every item gets the fixed number)."),
    "overlap_max": _("Adaptive overlap: the most votes an item may get."),
    "confidence_target": _(
        "Adaptive overlap: one more vote while the chosen method's confidence is below this (0 to 1; empty: the k-of-n rule alone)."
    ),
    "spread": _(
        "Adaptive overlap for ratings: one more rater while two ratings of one candidate differ by more than this many points."
    ),
    "order": _(
        "Which items annotators get first: sequential (a shuffled walk, as always), random, uncertainty (where the latest predictions are least sure) or disagreement (where the votes so far disagree most)."
    ),
    "retrain_every": _("The built-in model trains again after this many new decisions (0: only when asked)."),
    "suggestions": _(
        "Show annotators the latest predictions' label as a model's suggestion (not where the protocol wants them blind)."
    ),
}


# What the console's forms call each common setting, its unit, and the choices of those
# that take one of a few values; the codes stay what the API stores.
COMMON_SETTINGS_LABELS = {
    "claim_ttl": _("Claim lasts"),
    "idle_release_seconds": _("An idle page keeps its item"),
    "fold_letter_variants": _("Treat Arabic yeh and kaf as Persian"),
    "quality_flag_below": _("Flag annotators below kappa"),
    "aggregation": _("Gold from"),
    "overlap_min": _("Adaptive overlap: first votes"),
    "overlap_max": _("Adaptive overlap: most votes"),
    "confidence_target": _("Adaptive overlap: confidence wanted"),
    "spread": _("Adaptive overlap: largest spread"),
    "order": _("Order of items"),
    "retrain_every": _("Retrain the model after"),
    "suggestions": _("Show the model's suggestion"),
}
COMMON_SETTINGS_UNITS = {
    "claim_ttl": _("seconds"),
    "idle_release_seconds": _("seconds"),
    "overlap_min": _("votes"),
    "overlap_max": _("votes"),
    "spread": _("points"),
    "retrain_every": _("decisions"),
}
AGGREGATION_CHOICES = {
    "k_of_n": _("k of n (the paper's rule)"),
    "majority": _("majority"),
    "dawid_skene": _("Dawid-Skene"),
    "mace": _("MACE"),
}
ORDER_CHOICES = {
    "sequential": _("sequential"),
    "random": _("random"),
    "uncertainty": _("least certain prediction first"),
    "disagreement": _("most disagreement first"),
}
# Settings a supervisor rarely changes: folded away on the console's forms.
COMMON_RARE_SETTINGS = (
    "claim_ttl",
    "idle_release_seconds",
    "fold_letter_variants",
    "overlap_min",
    "overlap_max",
    "confidence_target",
    "spread",
    "retrain_every",
)
