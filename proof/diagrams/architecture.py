"""Chapter 7's whole-model diagram: the encoder-decoder Transformer drawn
bottom to top, one layer per stack inside a dashed frame repeated N times,
residual paths around every sublayer, the memory entering each decoder
layer's cross-attention, and the tensor shapes on the arrows.

The shapes are passed in (from a shape trace of a real model), so the
drawing's labels come from running the code, not from typing them.
"""

from __future__ import annotations

from collections.abc import Mapping

import matplotlib.pyplot as plt

from utils.checks import check_instance, check_int
from .base import bracket, canvas, label, shape_text
from .shapes import arrow, box

__all__ = ["MAP_KEYS", "SHAPE_KEYS", "transformer_architecture"]

# the shapes the drawing writes on its arrows, in the order they appear
SHAPE_KEYS = (
    "src_ids",
    "tgt_ids",
    "src_embed",
    "tgt_embed",
    "src_pos",
    "tgt_pos",
    "encoder",
    "decoder",
    "generator",
)
# the parts a course map can tag with the chapter that builds them
MAP_KEYS = (
    "embedding",
    "positional",
    "self-attention",
    "masked self-attention",
    "cross-attention",
    "add & norm",
    "feed-forward",
    "generator",
    "loss",
)
_EDGE = "#333333"
_W, _BH = 1.85, 0.42  # block width and height (inches)


def _check_shapes(shapes) -> dict[str, str]:
    if shapes is None:  # a map: no shapes written
        return {k: "" for k in SHAPE_KEYS}
    check_instance(shapes, "shapes", Mapping, "a mapping")
    missing = [k for k in SHAPE_KEYS if k not in shapes]
    if missing:
        raise ValueError(f"shapes lacks {missing}, expected {SHAPE_KEYS}")
    return {k: shape_text(shapes[k]) for k in SHAPE_KEYS}


def _check_chapters(chapters) -> dict[str, str]:
    if chapters is None:
        return {}
    check_instance(chapters, "chapters", Mapping, "a mapping")
    unknown = [k for k in chapters if k not in MAP_KEYS]
    if unknown:
        raise ValueError(f"chapters has unknown parts {unknown}: {MAP_KEYS}")
    for k, v in chapters.items():
        if not isinstance(v, (str, int)) or isinstance(v, bool):
            raise TypeError(f"chapters[{k!r}] must be a str or int, got {v!r}")
    return {k: str(v) for k, v in chapters.items()}


def _tag(ax, xy, text: str) -> None:
    # a chapter tag on a box's corner
    label(
        ax,
        xy,
        text,
        fontsize=11,
        fontweight="bold",
        bbox=dict(boxstyle="round,pad=0.2", fc="white", ec=_EDGE, lw=1.0),
        zorder=5,
    )


def transformer_architecture(
    shapes: Mapping | None,
    num_layers: int,
    *,
    norm: str = "Post-Norm",
    chapters: Mapping[str, str | int] | None = None,
) -> tuple[plt.Figure, plt.Axes]:
    """Draw the encoder-decoder Transformer; ``shapes`` maps every name in
    ``SHAPE_KEYS`` to a shape (tuple, ``torch.Size`` or tensor), or is None
    to write no shapes, and ``num_layers`` is N, the layers per stack.
    ``chapters`` (optional) makes the drawing a course map: it maps names in
    ``MAP_KEYS`` to the chapter that builds that part, written as a tag on
    its box ("loss" adds the loss on the logits). Returns ``(fig, ax)``."""
    text = _check_shapes(shapes)
    tags = _check_chapters(chapters)
    num_layers = check_int(num_layers, "num_layers", minimum=1)
    if norm != "Post-Norm":
        raise ValueError(f"norm must be 'Post-Norm' (drawn), got {norm!r}")
    fig, ax = canvas(6.5, 8.4)
    label(
        ax,
        (3.225, 8.2),
        "The course map: who builds what"
        if tags
        else f"The encoder-decoder Transformer ({norm})",
        fontsize=12,
        fontweight="bold",
    )
    xe, xd = 1.95, 4.5

    def block(x, y, name, kind, part=None):
        b = box(ax, (x, y), name, w=_W, h=_BH, kind=kind, fontsize=11)
        if part in tags:  # on the corner facing the other stack
            side = 1 if x < 3.225 else -1
            _tag(ax, (x + side * _W / 2, y + _BH / 2), tags[part])
        return b

    def chain(*boxes):
        for lower, upper in zip(boxes, boxes[1:]):
            arrow(ax, lower.top, upper.bottom)

    def skip(x, y_from, target, side):
        # the residual path: branch off below the sublayer, rejoin at the norm
        xs = x + side * (_W / 2 + 0.2)
        ax.plot([x, xs, xs], [y_from, y_from, target.y], color=_EDGE, lw=1.2)
        arrow(ax, (xs, target.y), target.right if side > 0 else target.left)

    def frame(x, y0, y1, side):
        ax.add_patch(
            plt.Rectangle(
                (x - _W / 2 - 0.3, y0),
                _W + 0.6,
                y1 - y0,
                fill=False,
                ls="--",
                ec="#777777",
            )
        )
        xb = x + side * (_W / 2 + 0.4)
        where = "right" if side > 0 else "left"
        bracket(ax, (xb, y0), (xb, y1), f"{num_layers} x", side=where)

    # inputs: ids -> embedding -> + positional encoding
    label(ax, (xe, 0.3), f"src ids {text['src_ids']}".strip())
    label(ax, (xd, 0.3), f"tgt ids (shifted right) {text['tgt_ids']}".strip())
    embs, pes = {}, {}
    for x, side in ((xe, "src"), (xd, "tgt")):
        embs[side] = block(
            x, 0.95, "embedding x sqrt(d)", "input", "embedding"
        )
        pes[side] = block(x, 1.75, "+ positional enc.", "input", "positional")
        arrow(ax, (x, 0.45), embs[side].bottom)
        arrow(
            ax,
            embs[side].top,
            pes[side].bottom,
            text=text[f"{side}_embed"] or None,
        )

    # one encoder layer (drawn once, repeated N times)
    y = 2.8
    e = [
        block(xe, y, "self-attention", "attention", "self-attention"),
        block(xe, y + 0.65, "Add & LayerNorm", "norm", "add & norm"),
        block(xe, y + 1.35, "feed-forward", "ffn", "feed-forward"),
        block(xe, y + 2.0, "Add & LayerNorm", "norm", "add & norm"),
    ]
    arrow(ax, pes["src"].top, e[0].bottom, text=text["src_pos"] or None)
    chain(*e)
    skip(xe, (pes["src"].top[1] + e[0].bottom[1]) / 2, e[1], side=-1)
    skip(xe, (e[1].top[1] + e[2].bottom[1]) / 2, e[3], side=-1)
    enc_top = e[3].top[1] + 0.12
    frame(xe, y - 0.4, enc_top, side=-1)

    # one decoder layer
    d = [
        block(
            xd,
            y,
            "masked self-attention",
            "attention",
            "masked self-attention",
        ),
        block(xd, y + 0.65, "Add & LayerNorm", "norm", "add & norm"),
        block(xd, y + 1.35, "cross-attention", "attention", "cross-attention"),
        block(xd, y + 2.0, "Add & LayerNorm", "norm", "add & norm"),
        block(xd, y + 2.7, "feed-forward", "ffn", "feed-forward"),
        block(xd, y + 3.35, "Add & LayerNorm", "norm", "add & norm"),
    ]
    arrow(
        ax,
        pes["tgt"].top,
        d[0].bottom,
        text=text["tgt_pos"] or None,
        offset=(-0.6, 0.0),
    )
    chain(*d)
    for i in (0, 2, 4):
        below = pes["tgt"].top[1] if i == 0 else d[i - 1].top[1]
        skip(xd, (below + d[i].bottom[1]) / 2, d[i + 1], side=1)
    dec_top = d[5].top[1] + 0.12
    frame(xd, y - 0.4, dec_top, side=1)

    # the memory: the encoder's output enters every cross-attention
    x_mid, y_mem = (xe + xd) / 2, enc_top + 0.35
    ax.plot(
        [xe, xe, x_mid, x_mid],
        [e[3].top[1], y_mem, y_mem, d[2].y],
        color=_EDGE,
        lw=1.2,
    )
    arrow(ax, (x_mid, d[2].y), d[2].left)
    label(
        ax,
        ((xe + x_mid) / 2, y_mem + 0.2),
        f"memory {text['encoder']}".strip(),
    )

    # output projection
    gen = block(xd, dec_top + 0.8, "linear (generator)", "output", "generator")
    arrow(ax, d[5].top, gen.bottom, text=text["decoder"] or None)
    arrow(
        ax,
        gen.top,
        (xd, gen.top[1] + 0.45),
        text=f"logits {text['generator']}".strip(),
    )
    if "loss" in tags:  # the loss reads the logits: no box of its own
        y_loss = gen.top[1] + 0.3
        label(ax, (xd - 0.7, y_loss), "softmax + loss", ha="right")
        _tag(ax, (xd - 0.45, y_loss), tags["loss"])
    if tags:
        label(
            ax,
            (0.15, 7.45),
            "tag on a box: the chapter\nthat builds it",
            ha="left",
            fontsize=11,
        )
    return fig, ax
