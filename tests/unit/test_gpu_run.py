"""The budgeted GPU run (the package training/gpu_run), proven on the CPU: the compact weights and
their hashes, the prepared corpora against the trainer's own encoding, the deadline in the training
loop, and the whole way from tools/gpu/train_base.sh to a checkpoint that the CLI and the app
open."""

from __future__ import annotations

import functools

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from tests.support.corpora import synthetic_pairs
from transformer_viz.checkpoints import state_dict_for_saving
from transformer_viz.checkpoints.compact import (
    HEADER_MARGIN,
    HashMismatch,
    dequantise,
    quantise,
    read_shards,
    write_shards,
)
from transformer_viz.models.transformer.config import preset
from transformer_viz.models.transformer.model import Transformer
from transformer_viz.text.corpora import encode_pairs, token_batches
from transformer_viz.training.gpu_run import DIRECTIONS, Prepared, join, prepare

REPO = Path(__file__).resolve().parents[2]


def _pairs() -> dict[str, list[tuple[str, str]]]:
    return {
        "train": synthetic_pairs(300, seed=1),
        "val": synthetic_pairs(30, seed=2),
        "tatoeba_train": synthetic_pairs(200, seed=3),
        "tatoeba_dev": synthetic_pairs(25, seed=4),
    }


# --- compact weights
# ----------------------------------------------------------------------------------


def test_int8_rows_with_power_of_two_scales_are_exact_in_float16_and_bfloat16():
    torch.manual_seed(0)
    rows = (
        torch.randn(6, 50) * torch.tensor([1e-3, 0.02, 0.5, 3.0, 40.0, 1e-9])[:, None]
    )  # (rows, cols)
    state = {"w": rows, "b": torch.randn(50)}
    compact = quantise(state)
    assert compact["w.q"].dtype == torch.int8 and compact["w.exp"].dtype == torch.int16
    restored = dequantise(compact)
    w = restored["w"]
    assert torch.equal(w, w.half().float()) and torch.equal(w, w.bfloat16().float())
    assert torch.equal(restored["b"], state["b"].half().float())
    step = torch.ldexp(torch.ones(6), compact["w.exp"].int())  # (rows,) the scale 2^e of each row
    assert bool(((w - rows).abs() <= step[:, None] / 2).all())  # rounding to the nearest multiple
    peaks = compact["w.q"].abs().amax(dim=1)
    # The tightest power of two: every row but the one below float16's range uses 64..127 levels.
    assert peaks[:5].min() >= 64 and peaks.max() <= 127


def test_shards_stay_under_the_limit_and_a_changed_byte_is_caught(tmp_path):
    torch.manual_seed(1)
    model = Transformer(preset("tiny", vocab_size=300))
    compact = quantise(state_dict_for_saving(model))
    limit = HEADER_MARGIN + 16 * 2**10  # 16 KiB of tensors per shard: the 60 KB model needs four
    files = write_shards(compact, tmp_path, "de-en", limit=limit)
    assert len(files) == 4 and all(f["bytes"] <= limit for f in files)
    back = read_shards(tmp_path, files)
    assert back.keys() == compact.keys() and all(torch.equal(back[k], compact[k]) for k in compact)
    victim = tmp_path / files[1]["file"]
    data = bytearray(victim.read_bytes())
    data[-1] ^= 1
    victim.write_bytes(bytes(data))
    with pytest.raises(HashMismatch, match="SHA-256"):
        read_shards(tmp_path, files)
    victim.unlink()
    with pytest.raises(HashMismatch, match="missing"):
        read_shards(tmp_path, files)


# --- the prepared corpora
# ---------------------------------------------------------------------------


def test_prepared_ids_are_what_the_trainer_encodes(tmp_path):
    pairs = _pairs()
    manifest = prepare(tmp_path / "data", pairs=pairs, vocab_size=120, log=lambda *_: None)
    assert manifest["pairs"] == {
        "multi30k_train": 300,
        "tatoeba_train": 200,
        "val": 30,
        "tatoeba_dev": 25,
    }
    prepared = Prepared.load(tmp_path / "data")
    assert len(prepared.tokenizer) == 120
    for split, key in (
        ("multi30k_train", "train"),
        ("tatoeba_train", "tatoeba_train"),
        ("val", "val"),
    ):
        for src, tgt in DIRECTIONS.values():
            text = [(p[0], p[1]) if src == "de" else (p[1], p[0]) for p in pairs[key]]
            for max_len in (6, 64):  # 6 cuts most sentences: the cut must be the trainer's too
                assert prepared.examples(split, src, tgt, max_len) == encode_pairs(
                    prepared.tokenizer, text, max_len
                )
    sources, references = prepared.dev_set("tatoeba_dev", "en", "de", 64, limit=10)
    assert references == [de for de, _ in pairs["tatoeba_dev"]][:10] and len(sources) == 10


# --- the training loop's deadline
# ------------------------------------------------------------------------


def test_run_epoch_stops_at_the_deadline_and_after_step_sees_every_update():
    from transformer_viz.training.common import TrainState
    from transformer_viz.training.translation import TrainConfig, run_epoch

    torch.manual_seed(0)
    model = Transformer(preset("tiny", vocab_size=50))
    examples = [([5, 6, 7, 2], [8, 9]) for _ in range(40)]
    batches = token_batches(
        examples, 40, shuffle=False
    )  # 5 examples (4 · 5 · 2 = 40 tokens) a batch
    optimizer = torch.optim.Adam(model.parameters(), lr=0.0, betas=(0.9, 0.98), eps=1e-9)
    scaler = torch.amp.GradScaler("cuda", enabled=False)
    tc, cpu = TrainConfig(config="tiny", amp="off"), torch.device("cpu")
    state = TrainState()
    epoch = functools.partial(run_epoch, model, model, optimizer, scaler, batches,
                              examples, tc, state, cpu, False, 1)
    epoch(deadline=time.time() - 1)
    assert state.step == 0
    seen = []
    _, tokens, _ = epoch(after_step=lambda st, loss, n: seen.append((st.step, n)) or st.step == 3)
    assert state.step == 3 and [s for s, _ in seen] == [1, 2, 3]
    assert (
        tokens == sum(n for _, n in seen) == 3 * 5 * 3
    )  # 3 batches of 5 targets of 2 tokens + </s>


def test_translate_encoded_gives_what_translate_texts_gives(tiny_model, tokenizer):
    from transformer_viz.generation.evaluation import translate_encoded, translate_texts

    texts = [s for s, _ in synthetic_pairs(12, seed=7)]
    sources = [
        s for s, _ in encode_pairs(tokenizer, [(t, "") for t in texts], tiny_model.cfg.max_len)
    ]
    assert translate_encoded(tiny_model, tokenizer, sources) == translate_texts(
        tiny_model, tokenizer, texts
    )


# --- the whole way, on the CPU
# -----------------------------------------------------------------------------

# The GPU machine has no Streamlit, plotly, pandas or transformers: each training process writes the
# top-level modules it imported when it exits, and none of these may be among them.
RECORDER = """
import atexit, os, sys
def record():
    names = sorted({name.split(".")[0] for name in sys.modules})
    with open(os.path.join(os.environ["IMPORTS_LOG"], f"{os.getpid()}.txt"), "w") as f:
        f.write("\\n".join(names))
atexit.register(record)
"""
ABSENT_ON_THE_GPU = {"streamlit", "plotly", "pandas", "transformers", "matplotlib"}


@pytest.mark.slow
def test_train_base_script_then_join_then_the_cli_and_the_app_open_the_checkpoint(
    tmp_path, monkeypatch
):
    prepare(tmp_path / "data", pairs=_pairs(), vocab_size=120, log=lambda *_: None)
    for folder in ("recorder", "imports"):
        (tmp_path / folder).mkdir()
    (tmp_path / "recorder" / "sitecustomize.py").write_text(RECORDER)
    env = {
        **os.environ,
        "PYTHON": sys.executable,
        "PYTHONPATH": f"{tmp_path / 'recorder'}{os.pathsep}{REPO}",
        "OMP_NUM_THREADS": "1",
        "IMPORTS_LOG": str(tmp_path / "imports"),
    }
    script = [
        str(REPO / "tools/gpu/train_base.sh"),
        "--preset",
        "tiny",
        "--data",
        str(tmp_path / "data"),
        "--work",
        str(tmp_path / "work"),
        "--batch-tokens",
        "300",
    ]
    flags = [
        "--",
        "--minutes",
        "0.3",
        "--eval-every",
        "50",
        "--eval-limit",
        "10",
        "--final-limit",
        "25",
        "--warmup",
        "40",
        "--lr-factor",
        "0.3",
        "--threads",
        "1",
    ]
    first = subprocess.run(
        script + flags,
        env={**env, "OUT": str(tmp_path / "out1")},
        capture_output=True,
        text=True,
        timeout=150,
    )
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    sent = sorted(p.name for p in (tmp_path / "out1").iterdir())
    assert sent == [
        "de-en.manifest.json",
        "de-en.weights-1-of-1.safetensors",
        "en-de.manifest.json",
        "train.log",
    ]
    assert (
        '"direction": "en-de"' in (tmp_path / "out1" / "train.log").read_text()
    )  # dev BLEU as it went
    imported = [set(p.read_text().split()) for p in (tmp_path / "imports").iterdir()]
    assert len(imported) >= 2 and all(
        "torch" in names and not names & ABSENT_ON_THE_GPU for names in imported
    )
    second = subprocess.run(
        script + ["--send", "en-de"],
        env={**env, "OUT": str(tmp_path / "out2")},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert second.returncode == 0, second.stderr
    returned = tmp_path / "returned"
    returned.mkdir()
    for folder in ("out1", "out2"):
        for path in (tmp_path / folder).iterdir():
            (returned / path.name).write_bytes(path.read_bytes())

    manifest = json.loads((returned / "de-en.manifest.json").read_text())
    assert (
        manifest["steps"] > 0 and manifest["train_seconds"] < 0.3 * 60 + 5
    )  # a budget within a step
    as_sent = manifest["dev_scores_as_sent"]["val"]
    assert (
        as_sent["bleu"] > 1 and len(set(as_sent["hypotheses"])) > 5
    )  # the word mapping, being learned
    reports = join(
        returned,
        tmp_path / "data",
        tmp_path / "ckpts",
        commands=["tools/gpu/train_base.sh"],
        log=lambda *_: None,
    )
    for direction in DIRECTIONS:
        agreement = reports[direction]["agreement"]
        # The same CPU scored both times: the same weights give the same translations, exactly.
        assert all(
            a["difference"] == 0 and a["different_translations"] == 0 for a in agreement.values()
        )
    directory = tmp_path / "ckpts" / "base-de-en"
    assert sorted(p.name for p in directory.iterdir()) == [
        "README.md",
        "config.json",
        "generation_config.json",
        "language_stats.json",
        "metadata.json",
        "model.safetensors",
        "tokenizer",
    ]
    card = (directory / "README.md").read_text()
    assert "tools/gpu/train_base.sh" in card and f"steps: {manifest['steps']}" in card
    assert "target_tokens_per_s" in card and "dry run" in card

    sentence = "ein hund läuft im park ."
    cli = subprocess.run(
        [
            sys.executable,
            "-m",
            "transformer_viz",
            "translate",
            "--checkpoint",
            str(directory),
            sentence,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
    )
    assert cli.returncode == 0, cli.stderr

    from transformer_viz.app import catalogue, loaders
    from transformer_viz.generation.evaluation import translate_texts

    monkeypatch.setenv(catalogue.CHECKPOINTS_ENV, str(tmp_path / "ckpts"))
    assert sorted(catalogue.list_checkpoints()) == ["base-de-en", "base-en-de"]
    de_en = loaders.load_listed("transformer", "base-de-en")
    assert cli.stdout.strip() == translate_texts(de_en.model, de_en.tokenizer, [sentence])[0] != ""
    loaded = loaders.load_listed("transformer", "base-en-de")
    weights = dequantise(
        read_shards(returned, json.loads((returned / "en-de.manifest.json").read_text())["files"])
    )
    assert all(torch.equal(loaded.model.state_dict()[k], v) for k, v in weights.items())
    assert loaded.metadata["src_lang"] == "en" and loaded.generation.num_beams == 1
