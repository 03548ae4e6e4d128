"""How an evaluation's figures are stored: a nested tree of figures with intervals, and the
per-item arrays a paired comparison resamples."""

from __future__ import annotations

import io

import numpy as np


def per_item_pack(keys: list[str], arrays: dict) -> bytes:
    buffer = io.BytesIO()
    np.savez_compressed(buffer, __keys__=np.array(keys, dtype=str), **arrays)
    return buffer.getvalue()


def per_item_unpack(blob) -> tuple[list[str], dict]:
    with np.load(io.BytesIO(bytes(blob)), allow_pickle=False) as stored:
        keys = stored["__keys__"].tolist()
        return keys, {name: stored[name] for name in stored.files if name != "__keys__"}


def nest(flat: dict) -> dict:
    """{"a.b.c": x} → {"a": {"b": {"c": x}}}."""
    tree: dict = {}
    for path, value in flat.items():
        *parents, last = path.split(".")
        node = tree
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = value
    return tree


def merge(tree: dict, extra: dict) -> dict:
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(tree.get(key), dict):
            merge(tree[key], value)
        else:
            tree[key] = value
    return tree


def plain(tree):
    """Figures without their intervals: each {"value", "ci_low", "ci_high"} becomes its value."""
    if isinstance(tree, dict):
        if set(tree) == {"value", "ci_low", "ci_high"}:
            return tree["value"]
        return {key: plain(value) for key, value in tree.items()}
    return tree


def figure_at(tree: dict | None, path: str):
    """The figure at a dotted path of nested figures, or None."""
    node = tree
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def flatten_figures(tree: dict, prefix: str = "") -> list[tuple[str, object]]:
    """(dotted name, figure) for every figure of a nested tree: a figure is a leaf or a
    dict of value and interval ({"value", "ci_low", "ci_high"} or a Difference's); the
    confusion matrix is one figure."""
    out = []
    for key, value in tree.items():
        name = f"{prefix}.{key}" if prefix else key
        if (
            isinstance(value, dict)
            and key != "confusion"
            and not ({"value", "ci_low"} <= set(value) or {"difference", "ci_low"} <= set(value))
        ):
            out.extend(flatten_figures(value, name))
        else:
            out.append((name, value))
    return out
