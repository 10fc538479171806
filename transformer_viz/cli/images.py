"""The commands of the models that read pixels: ``train-vit`` and ``vit-eval`` (the Vision
Transformer on scikit-learn's 8x8 digits), ``train-detr`` and ``detr-eval`` (the toy DETR on
canvases of those digits). Each prints one JSON object."""

from __future__ import annotations

import json

from transformer_viz.cli.common import DEFAULT_CHECKPOINT, require_family
from transformer_viz.cli.training import config_from, dataclass_flags


def _log(args):
    return (lambda _: None) if args.no_progress else print


def _print_summary(metadata: dict, score: str, unit: str, out) -> None:
    """One JSON line after training: the metadata's ``score``, the minutes, how many ``unit`` ran
    (epochs or steps) and where the checkpoint went."""
    training = metadata["training"]
    print(json.dumps({score: metadata[score], "minutes": training["minutes"],
                      unit: training[f"{unit}_run"], "out": out}))


def cmd_train_vit(args) -> int:
    from transformer_viz.training.vit import ViTTrainConfig, train_vit

    metadata = train_vit(config_from(args, ViTTrainConfig), args.out, log=_log(args))
    _print_summary(metadata, "held_out_accuracy", "epochs", args.out)
    return 0


def cmd_vit_eval(args) -> int:
    from transformer_viz.checkpoints import load_checkpoint
    from transformer_viz.vision.digits import accuracy, load_split

    require_family(args.checkpoint, "vit")
    checkpoint, split = load_checkpoint(args.checkpoint), load_split()
    print(json.dumps({"checkpoint": str(args.checkpoint), "split": "held-out 20 %",
                      "images": int(len(split.test_labels)),
                      "held_out_accuracy": round(accuracy(checkpoint.model, split.test_images,
                                                          split.test_labels), 4),
                      "model_card": checkpoint.metadata.get("held_out_accuracy")}))
    return 0


def cmd_train_detr(args) -> int:
    from transformer_viz.training.detr import DETRTrainConfig, train_detr

    metadata = train_detr(config_from(args, DETRTrainConfig), args.run_dir, args.out,
                          log=_log(args))
    _print_summary(metadata, "validation", "steps", args.out)
    return 0


def cmd_detr_eval(args) -> int:
    from transformer_viz.checkpoints import load_checkpoint
    from transformer_viz.checkpoints.records import record_detr_test
    from transformer_viz.vision.canvases import TRAIN_SEED, evaluate

    require_family(args.checkpoint, "detr")
    if args.seed == TRAIN_SEED:
        raise SystemExit(f"error: seed {TRAIN_SEED} made the training canvases; evaluate on any "
                         "other seed")
    if args.canvases < 1:
        raise SystemExit("error: --canvases must be at least 1")
    report = evaluate(load_checkpoint(args.checkpoint).model, args.seed, args.canvases, args.images)
    print(json.dumps({"checkpoint": str(args.checkpoint), "iou_threshold": 0.5, **report}))
    if args.record:
        record_detr_test(args.checkpoint, report)
    return 0


def _training_flags(p, config_class) -> None:
    """What both image training commands take: where to write the checkpoint, and their
    configuration's fields."""
    p.add_argument("--out", required=True, help="write the checkpoint directory here")
    p.add_argument("--no-progress", action="store_true")
    dataclass_flags(p, config_class, {})


def add_commands(sub) -> None:
    from transformer_viz.training.detr import DETRTrainConfig
    from transformer_viz.training.vit import ViTTrainConfig

    p = sub.add_parser("train-vit",
                       help="train the Vision Transformer on scikit-learn's 8x8 digits "
                            "(80 %% of them; the held-out 20 %% is scored once at the end)")
    _training_flags(p, ViTTrainConfig)
    p.set_defaults(func=cmd_train_vit)

    p = sub.add_parser("vit-eval",
                       help="JSON with a Vision Transformer's accuracy on the held-out 20 %% of "
                            "the digits")
    p.add_argument("--checkpoint", default=str(DEFAULT_CHECKPOINT.parent / "vit-digits"))
    p.set_defaults(func=cmd_vit_eval)

    p = sub.add_parser("train-detr",
                       help="train the toy DETR on fresh canvases of the training digits "
                            "(resumes from --run-dir)")
    p.add_argument("--run-dir", required=True,
                   help="working directory: resumable state and history")
    _training_flags(p, DETRTrainConfig)
    p.set_defaults(func=cmd_train_detr)

    p = sub.add_parser("detr-eval", help="JSON with a DETR's precision and recall (IoU >= 0.5, "
                                         "right class) on new canvases")
    p.add_argument("--checkpoint", default=str(DEFAULT_CHECKPOINT.parent / "detr-digits"))
    p.add_argument("--canvases", type=int, default=1000, help="how many canvases (default: 1000)")
    p.add_argument("--seed", type=int, required=True,
                   help="canvas seed; never the training seed (0)")
    p.add_argument("--images", default="held-out", choices=("held-out", "train"),
                   help="which digit images fill the canvases (default: held-out, never trained "
                        "on)")
    p.add_argument("--record", action="store_true",
                   help="store the result as the test score in the model card")
    p.set_defaults(func=cmd_detr_eval)
