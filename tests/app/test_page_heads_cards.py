"""The steps of "What does a head do?" added for the lens and the heads' identity: the plain /
tuned lens switch (disabled, with its reason, where a checkpoint ships no tuned lens; with one, the
KL bars become the tuned lens's), the lens after every sublayer, and the map of head types whose
cards switch a head off through the URL's ``off=``."""

from __future__ import annotations

import shutil

import numpy as np
import torch

from tests.support.apptest import SENTENCE, chart, rerun
from tests.support.figures import array
from transformer_viz.engine import run_sentence
from transformer_viz.interpret.ablation import KINDS
from transformer_viz.interpret.lens import sublayer_lens
from transformer_viz.interpret.tuned_lens import TunedLens, save_tuned_lens, sentence_lens

PAGE = "transformer_viz/app/pages/heads.py"
LENS_STEP, CARDS_STEP = 1, 4


def test_without_a_tuned_lens_the_switch_is_disabled_and_the_plain_kl_is_shown(
        open_app, open_step, tiny_checkpoint):
    at = open_step(open_app(PAGE), "heads_step", LENS_STEP)
    switch = at.radio(key="heads_lens_kind")
    assert switch.disabled and switch.value == "plain logit lens"
    assert any("ships no tuned lens" in c.value for c in at.caption)
    run = run_sentence(tiny_checkpoint, SENTENCE)
    model = tiny_checkpoint.model
    expected = sentence_lens(model, None, run.src_ids, run.tgt_ids)["kl"]
    np.testing.assert_allclose(array(chart(at, "heads-lens-kl")["data"][0]["y"]), expected,
                               rtol=1e-5, atol=1e-6)
    predicted = torch.tensor(run.tgt_ids[1:] + [model.cfg.eos_id])
    sub = sublayer_lens(model, torch.tensor([run.src_ids]), torch.tensor([run.tgt_ids]), predicted)
    shown = array(chart(at, "heads-sublayer-lens")["data"][-1]["z"])
    np.testing.assert_allclose(shown, sub["p"].reshape(-1, sub["p"].shape[-1]), atol=1e-6)
    assert any("Was it cross-attention or the FFN" in m.value for m in at.markdown)


def test_a_tuned_lens_changes_the_kl_shown(make_app, open_step, checkpoint_dir, tmp_path,
                                           monkeypatch, tiny_checkpoint):
    # a copy of the tiny checkpoint under another name (the app caches models by name), with a
    # tuned lens that is not the identity
    root = tmp_path / "checkpoints"
    shutil.copytree(checkpoint_dir, root / "tiny-tuned")
    cfg = tiny_checkpoint.config
    lens = TunedLens(cfg.d_model, cfg.N)
    with torch.no_grad():
        for m in lens.maps:
            m.bias.add_(0.5)
    save_tuned_lens(lens, root / "tiny-tuned", {"kl_plain": [2.0, 1.0, 0.0],
                                               "kl_tuned": [1.0, 0.5, 0.0], "held_out_pairs": 10,
                                               "held_out": "test pairs", "training_pairs": 20})
    monkeypatch.setenv("TRANSFORMER_VIZ_CHECKPOINTS", str(root))
    at = make_app()
    at.query_params["ckpt"] = "tiny-tuned"
    rerun(at)
    at.switch_page(PAGE)
    at = open_step(rerun(at), "heads_step", LENS_STEP)
    run = run_sentence(tiny_checkpoint, SENTENCE)
    plain = array(chart(at, "heads-lens-kl")["data"][0]["y"])
    at.radio(key="heads_lens_kind").set_value("tuned lens")
    rerun(at)
    tuned = array(chart(at, "heads-lens-kl")["data"][0]["y"])
    expected = sentence_lens(tiny_checkpoint.model, lens, run.src_ids, run.tgt_ids)["kl"]
    np.testing.assert_allclose(tuned, expected, rtol=1e-5, atol=1e-6)
    assert not np.allclose(tuned[:-1], plain[:-1])
    assert any("2.00 → 1.00" in c.value for c in at.caption)  # the checkpoint's report
    rank = array(chart(at, "heads-lens")["data"][-1]["z"])
    assert rank.shape == (cfg.N, len(run.tgt_ids))


def test_the_type_map_has_a_cell_per_head_and_a_card_switches_its_head_off(open_app, open_step,
                                                                           tiny_checkpoint):
    at = open_step(open_app(PAGE), "heads_step", CARDS_STEP)
    cfg = tiny_checkpoint.config
    panels = chart(at, "heads-types")["data"]
    assert len(panels) == len(KINDS)
    assert all(array(panel["z"]).shape == (cfg.N, cfg.h) for panel in panels)
    names = [f"{k}.{i}.{j}" for k in KINDS for i in range(cfg.N) for j in range(cfg.h)]
    at.selectbox(key="heads_card").set_value(names.index("cross.1.2"))
    rerun(at)
    card = at.dataframe[0].value
    assert list(card["what"])[0] == "type" and "drop" in list(card["what"])[-1]
    button = at.button(key="heads_card_off")
    assert button.label == "Switch cross.1.2 off"
    button.click()
    rerun(at)
    assert at.query_params["off"] == "cross.1.2" and at.button(key="heads_card_off").disabled
    at.selectbox(key="heads_card").set_value(names.index("enc.0.1"))
    rerun(at)
    at.button(key="heads_card_off").click()
    rerun(at)
    assert at.query_params["off"] == "cross.1.2,enc.0.1"
    at = open_step(at, "heads_step", 0)  # step 1 reads them
    assert at.multiselect(key="heads_off").value == ["cross.1.2", "enc.0.1"]
