"""A checkpoint of the paper's base size beside the small ones: the sidebar names it ("paper size",
and under it "512 × 6 layers") and lists it after them, so the default stays a small model; picking
it runs the pages on it; the other direction offered is one of the same size."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

from tests.support.apptest import SENTENCE, open_page, rerun
from transformer_viz.checkpoints import save_checkpoint
from transformer_viz.models.transformer.config import preset
from transformer_viz.models.transformer.model import Transformer
from transformer_viz.views import lecture, practice

# Names of their own: the app's caches are per process and keyed by a checkpoint's name. By name
# alone "paper-…" would come first.
SMALL = {"de-en": "pz-de-en", "en-de": "pz-en-de"}
PAPER = {"de-en": "paper-de-en", "en-de": "paper-en-de"}
PAPER_LABEL = "German → English · paper size"
PAPER_NOTE = ("Paper size: 512 × 6 layers (d_model 512, d_ff 2048, h 8, N 6), the paper's base "
              "model.")


def _direction(directory, src: str, tgt: str) -> None:
    card = directory / "metadata.json"
    metadata = json.loads(card.read_text())
    card.write_text(json.dumps({**metadata, "name": directory.name, "src_lang": src,
                                "tgt_lang": tgt}))


@pytest.fixture(scope="module")
def sized_root(tmp_path_factory, tiny_model, tokenizer):
    """Two tiny models and two of the paper's base shapes (random weights, a short max_len), one of
    each for each direction."""
    root = tmp_path_factory.mktemp("sized")
    for direction, name in SMALL.items():
        save_checkpoint(root / name, tiny_model, tokenizer)
        _direction(root / name, *direction.split("-"))
    torch.manual_seed(0)
    base = Transformer(preset("base", vocab_size=len(tokenizer), max_len=64)).eval()
    save_checkpoint(root / PAPER["de-en"], base, tokenizer, half=True)
    shutil.copytree(root / PAPER["de-en"], root / PAPER["en-de"])
    for direction, name in PAPER.items():
        _direction(root / name, *direction.split("-"))
    return root


def test_paper_size_is_named_listed_last_and_answered_by_its_own_size(sized_root, tmp_path,
                                                                      monkeypatch):
    from transformer_viz.app import about

    monkeypatch.setenv("TRANSFORMER_VIZ_CHECKPOINTS", str(sized_root))
    assert about.checkpoints_in_order() == [*SMALL.values(), *PAPER.values()]
    assert about.model_label(PAPER["de-en"]) == PAPER_LABEL
    assert about.model_label(SMALL["de-en"]) == "German → English"
    sizes = [about.is_paper_size(name) for name in (*SMALL.values(), *PAPER.values())]
    assert sizes == [False, False, True, True]
    assert about.reverse_checkpoint(PAPER["de-en"]) == PAPER["en-de"]
    assert about.reverse_checkpoint(SMALL["de-en"]) == SMALL["en-de"]
    assert about.transformer_for("de", "en") == SMALL["de-en"]
    # without a paper-size model for the other direction, the small one is offered
    for name in (SMALL["en-de"], PAPER["de-en"]):
        shutil.copytree(sized_root / name, tmp_path / name)
    monkeypatch.setenv("TRANSFORMER_VIZ_CHECKPOINTS", str(tmp_path))
    assert about.reverse_checkpoint(PAPER["de-en"]) == SMALL["en-de"]


def test_the_default_stays_small_and_picking_paper_size_runs_the_pages(sized_root, make_app,
                                                                        monkeypatch):
    monkeypatch.setenv("TRANSFORMER_VIZ_CHECKPOINTS", str(sized_root))
    at = rerun(make_app(SENTENCE))
    picker = at.selectbox(key="checkpoint")
    assert picker.value == SMALL["de-en"]
    assert list(picker.options) == ["German → English", "English → German", PAPER_LABEL,
                                    "English → German · paper size"]
    assert PAPER_NOTE not in [c.value for c in at.sidebar.caption]
    picker.set_value(PAPER["de-en"])
    rerun(at)
    assert PAPER_NOTE in [c.value for c in at.sidebar.caption]
    at = open_page(at, "transformer_viz/app/pages/shapes.py")
    rows = at.dataframe[0].value.set_index("name")
    loaded = [c for c in rows.columns if c.startswith("loaded")][0]
    # the loaded model is the paper's size: its shapes are the paper base column's
    assert rows.loc["encoder.5.ffn.hidden", loaded].endswith(", 2048)")
    assert rows.loc["encoder.0.self_attn.q", loaded].startswith("(1, 8, ")
    assert rows.loc["encoder.0.self_attn.q", loaded].endswith(", 64)")


@pytest.mark.parametrize("models", [SMALL, PAPER], ids=["small", "paper size"])
def test_a_lecture_preset_in_the_other_language_keeps_the_readers_size(models, sized_root,
                                                                       make_app, monkeypatch):
    monkeypatch.setenv("TRANSFORMER_VIZ_CHECKPOINTS", str(sized_root))
    at = make_app(SENTENCE)
    at.query_params["ckpt"] = models["de-en"]
    at = open_page(at, "transformer_viz/app/pages/lecture.py")
    english = next(p for p in lecture.PRESETS if p.src_lang == "en")
    at.selectbox(key="lecture_preset").set_value(english)
    rerun(at)
    assert at.query_params["ckpt"] == models["en-de"]
    assert at.query_params["s"] == english.sentence


@pytest.mark.parametrize("name", ["small", "base"])
def test_layer_parameters_are_the_models_layer_weight_matrices(name):
    from transformer_viz.app import on_request

    cfg = preset(name, vocab_size=100)
    model = Transformer(cfg)
    matrices = sum(p.numel() for n, p in model.named_parameters()
                   if p.dim() == 2 and n.startswith(("encoder_layers.", "decoder_layers.")))
    assert on_request.layer_parameters(cfg) == matrices
    assert on_request.is_large(cfg) == (name == "base")
    assert matrices == {"small": 5_505_024, "base": 44_040_192}[name]


def _texts(at) -> str:
    return " ".join(e.value for e in [*at.caption, *at.markdown])


def test_a_large_models_slow_steps_wait_for_their_button_once_per_sentence(sized_root, make_app,
                                                                          monkeypatch):
    """The paper-size model: step 1 of the heads page shows the token probabilities at once and the
    bars of 144 heads only after the button; a new sentence asks again. Steps 3 (attributions) and 5
    (head cards), the Lecture's heads step and Practice's head-off exercise wait the same way."""
    from tests.support.apptest import OTHER_SENTENCE, change_sentence, charts

    monkeypatch.setenv("TRANSFORMER_VIZ_CHECKPOINTS", str(sized_root))
    at = make_app(SENTENCE)
    at.query_params["ckpt"] = PAPER["de-en"]
    at = open_page(at, "transformer_viz/app/pages/heads.py")
    assert set(charts(at)) == {"heads-token-probs"}
    assert "44M parameters in its layers" in _texts(at)
    at.button(key="ask_heads_drops").click()
    rerun(at)
    assert not [b for b in at.button if b.key == "ask_heads_drops"]  # gone in the click's own run
    drops = json.loads(charts(at)["heads-drops"])["data"]
    assert sum(len(trace["x"]) for trace in drops) == 3 * 6 * 8
    rerun(at)  # asked for this sentence: it stays
    assert "heads-drops" in charts(at)
    at = change_sentence(at, OTHER_SENTENCE)
    assert set(charts(at)) == {"heads-token-probs"}
    assert at.button(key="ask_heads_drops")

    for step, work, chart_name in ((3, "heads_ig", "heads-ig"), (5, "heads_cards", "heads-types")):
        at = make_app(SENTENCE)
        at.query_params.update({"ckpt": PAPER["de-en"], "step": str(step)})
        at.switch_page("transformer_viz/app/pages/heads.py")
        rerun(at)
        assert chart_name not in charts(at) and at.button(key=f"ask_{work}")

    why = next(i for i, s in enumerate(lecture.STEPS) if s.id == "why") + 1
    at = make_app(SENTENCE)
    at.query_params.update({"ckpt": PAPER["de-en"], "step": str(why)})
    at.switch_page("transformer_viz/app/pages/lecture.py")
    assert "lecture-why" not in charts(rerun(at)) and at.button(key="ask_lecture_why")
    step = next(i for i, s in enumerate(lecture.STEPS) if s.id == "heads") + 1
    at = make_app(SENTENCE)
    at.query_params.update({"ckpt": PAPER["de-en"], "step": str(step)})
    at.switch_page("transformer_viz/app/pages/lecture.py")
    rerun(at)
    assert "lecture-heads" not in charts(at) and at.button(key="ask_lecture_heads")
    at.button(key="ask_lecture_heads").click()
    assert "lecture-heads" in charts(rerun(at))

    exercise = next(i for i, e in enumerate(practice.EXERCISES) if e.id == "head_off") + 1
    at = make_app(SENTENCE)
    at.query_params.update({"ckpt": PAPER["de-en"], "ex": str(exercise)})
    at.switch_page("transformer_viz/app/pages/practice.py")
    rerun(at)
    answer = f"practice_answer_{exercise}"
    assert not [t for t in at.get("text_input") if t.key == answer]
    at.button(key="ask_practice_head_off").click()
    rerun(at)
    assert [t for t in at.get("text_input") if t.key == answer]
