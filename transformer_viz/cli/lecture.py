"""``export-lecture``: the Lecture page's steps on one sentence as one HTML file that opens with no
network and no server (views/lecture/export.py), for a lecture hall without a connection."""

from __future__ import annotations

import os
from pathlib import Path

from transformer_viz.cli.common import fail


def unwritable(path: Path) -> str | None:
    """Why ``path`` cannot be written, or None: checked before the model runs, so that a typing
    mistake costs a second, not the whole lecture's figures."""
    if path.is_dir():
        return f"{path} is a directory; name the file to write, e.g. {path / 'lecture.html'}"
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        return f"cannot write {path}: the folder {parent} does not exist"
    if not os.access(parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        return f"cannot write {path}: permission denied"
    return None


def cmd_export_lecture(args) -> int:
    from transformer_viz.cli.common import load_translation_model, refuse_too_long
    from transformer_viz.cli.explain import require_transformer
    from transformer_viz.text.tokenizer import InputError
    from transformer_viz.views.lecture.export import MAX_BYTES, lecture_html

    out = Path(args.output)
    problem = unwritable(out)
    if problem:
        return fail(problem)
    if not args.sentence.strip():
        raise InputError("the sentence is empty: give the lecture a sentence to translate")
    ckpt = load_translation_model(args.checkpoint)
    require_transformer(ckpt)
    refuse_too_long(ckpt.tokenizer, args.sentence, ckpt.config.max_len)
    text = lecture_html(ckpt, args.sentence, args.layer, args.head, notes=args.notes)
    data = text.encode("utf-8")
    try:
        out.write_bytes(data)
    except OSError as exc:  # a full disk, a folder that changed meanwhile
        return fail(f"cannot write {out}: {exc.strerror or exc}")
    size = f"{len(data) / 1e6:.1f} MB"
    print(f"wrote {out}: {size}, the title page and {text.count('<section') - 1} steps")
    if len(data) > MAX_BYTES:  # a sentence far longer than a lecture's: the file is still written
        print(f"note: over {MAX_BYTES / 1e6:.0f} MB; a shorter sentence gives a smaller file")
    return 0


def add_commands(sub) -> None:
    from transformer_viz.cli.common import DEFAULT_CHECKPOINT

    p = sub.add_parser("export-lecture", help="the Lecture's steps on a sentence as one HTML file "
                                              "that needs no network (arrow keys, a clicker)")
    p.add_argument("sentence", help="the sentence the lecture's numbers and figures are drawn from")
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="the HTML file to write")
    p.add_argument("--checkpoint", default=str(DEFAULT_CHECKPOINT), help="checkpoint directory")
    # checked against the model's layers and heads by lecture_html (one line, exit code 2)
    p.add_argument("--layer", type=int, default=0, help="the layer the figures of one layer show")
    p.add_argument("--head", type=int, default=0, help="the head the figures of one head show")
    p.add_argument("--notes", action="store_true", help="add each step's speaker notes (folded)")
    p.set_defaults(func=cmd_export_lecture)
