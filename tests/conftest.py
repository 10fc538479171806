"""Fixtures: a tiny tokenizer, model and checkpoint built in a temporary directory (no data, no
network), and the app on that checkpoint in Streamlit's AppTest (helpers to read what it drew:
tests/support/apptest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tests.support.apptest import SENTENCE, charts, open_page
from tests.support.corpora import prepare_synthetic, synthetic_pairs
from transformer_viz.checkpoints import load_checkpoint, save_checkpoint
from transformer_viz.models.transformer.config import preset
from transformer_viz.models.transformer.model import Transformer
from transformer_viz.text.tokenizer import train_tokenizer

# The tensors here are tiny: one thread avoids thread start-up and contention costs on a 2-core
# machine, and it is how the app runs the model (app/threads.py sets one thread per call).
torch.set_num_threads(1)


@pytest.fixture(autouse=True, scope="module")
def one_torch_thread():
    """Every test module starts with one torch thread again, whatever a test before it set."""
    torch.set_num_threads(1)

@pytest.fixture(scope="session")
def tokenizer():
    pairs = synthetic_pairs(300)
    return train_tokenizer([s for s, _ in pairs] + [t for _, t in pairs], vocab_size=200,
                           min_frequency=1)


@pytest.fixture(scope="session")
def tiny_model(tokenizer):
    torch.manual_seed(0)
    return Transformer(preset("tiny", vocab_size=len(tokenizer))).eval()


@pytest.fixture(scope="session")
def sentence_trace(tiny_model):
    """A traced forward of the tiny model: 6 source tokens, 5 target tokens (no padding)."""
    from transformer_viz.engine import traced_forward

    src_ids, tgt_ids = [5, 9, 14, 9, 20, 2], [1, 7, 11, 30, 8]
    return src_ids, tgt_ids, traced_forward(tiny_model, src_ids, tgt_ids)


TINY_VIT, TINY_VIT_SEED = dict(d_model=16, d_ff=32, h=2, N=2, dropout=0.0), 3
TINY_GPT, TINY_GPT_SEED = dict(d_model=16, d_ff=32, h=2, N=2, max_len=24, dropout=0.0), 5
TINY_DETR, TINY_DETR_SEED = dict(backbone_channels=4, d_model=16, d_ff=32, h=2, n_queries=6), 4


@pytest.fixture(scope="session")
def checkpoint_dir(tmp_path_factory, tiny_model, tokenizer):
    """The tiny Transformer, and beside it two tiny recurrent models (without and with attention)
    for the RNN page, a tiny Vision Transformer and a tiny DETR (random weights) for their pages;
    the sidebar lists the Transformer only."""
    from transformer_viz.models.detr.config import DETRConfig
    from transformer_viz.models.detr.model import DETR
    from transformer_viz.models.rnn.model import RNNSeq2Seq
    from transformer_viz.models.rnn.config import preset as rnn_preset
    from transformer_viz.models.vit.config import ViTConfig
    from transformer_viz.models.vit.model import ViT
    from transformer_viz.training.detr import save_detr_checkpoint
    from transformer_viz.training.vit import save_vit_checkpoint

    path = tmp_path_factory.mktemp("ckpt") / "tiny"
    save_checkpoint(path, tiny_model, tokenizer,
                    {"name": "tiny test model", "src_lang": "de", "tgt_lang": "en",
                     "history": [{"epoch": 1, "step": 10, "train_loss": 5.0,
                                                               "val_loss": 5.1, "val_bleu": 1.0,
                                  "elapsed_s": 6}]})
    for name, attention in (("rnn-de-en", False), ("rnn-attn-de-en", True)):
        torch.manual_seed(1 + attention)
        rnn = RNNSeq2Seq(rnn_preset("tiny", vocab_size=len(tokenizer), attention=attention)).eval()
        save_checkpoint(path.parent / name, rnn, tokenizer,
                        {"name": name, "src_lang": "de", "tgt_lang": "en"})
    torch.manual_seed(TINY_VIT_SEED)
    save_vit_checkpoint(path.parent / "vit-tiny", ViT(ViTConfig(**TINY_VIT)).eval(),
                        {"held_out_accuracy": 0.125, "held_out_images": 360})
    torch.manual_seed(TINY_DETR_SEED)
    save_detr_checkpoint(path.parent / "detr-tiny", DETR(DETRConfig(**TINY_DETR)).eval(),
                         {"test": {"canvases": 1000, "seed": 5, "images": "held-out",
                                   "precision": 0.031, "recall": 0.042}})
    from transformer_viz.checkpoints.cards import gpt_card
    from transformer_viz.models.gpt.config import GPTConfig
    from transformer_viz.models.gpt.model import GPT

    torch.manual_seed(TINY_GPT_SEED)
    gpt = GPT(GPTConfig(vocab_size=len(tokenizer), **TINY_GPT)).eval()
    save_checkpoint(path.parent / "gpt-tiny", gpt, tokenizer, {"name": "tiny GPT", "lang": "en"},
                    card=gpt_card)
    return path


@pytest.fixture(scope="session")
def tiny_checkpoint(checkpoint_dir):
    return load_checkpoint(checkpoint_dir)


@pytest.fixture()
def make_app(checkpoint_dir, monkeypatch):
    """A factory: make_app(sentence) -> the app's AppTest on the tiny checkpoint, with the sentence
    in the URL (as a shared link gives it), before its first run."""
    from streamlit.components.v2.component_manager import BidiComponentManager
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("TRANSFORMER_VIZ_CHECKPOINTS", str(checkpoint_dir.parent))
    # The app uses no custom components; each new AppTest would otherwise read the metadata of every
    # installed package looking for some (~0.5 s of the ~0.8 s one run takes here).
    monkeypatch.setattr(BidiComponentManager, "discover_and_register_components",
                        lambda self, **kw: None, raising=False)
    app_path = str(Path(__file__).resolve().parent.parent / "app.py")

    def make(sentence: str = SENTENCE) -> AppTest:
        at = AppTest.from_file(app_path, default_timeout=60)
        at.query_params["s"] = sentence
        return at

    return make


@pytest.fixture()
def open_app(make_app):
    """A factory: open_app(page, sentence) -> the app's AppTest on that page (a file in
    transformer_viz/app/pages/), run."""

    def open_(page: str, sentence: str = SENTENCE):
        return open_page(make_app(sentence), page)

    return open_


@pytest.fixture()
def open_step():
    """open_step(at, key, n) -> at, rerun with the n-th step (from 0) of the page's steps.tabs(...,
    key) open."""

    def open_(at, key: str, n: int):
        at.session_state[key] = at.tabs[n].label
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        return at

    return open_


@pytest.fixture()
def every_step(open_step):
    """every_step(at, key) -> {chart name: plotly JSON} over all the tabs of a page's
    steps.tabs(..., key), opening each in turn (only the open step runs); the last step is left
    open."""

    def collect(at, key: str) -> dict[str, str]:
        labels = [tab.label for tab in at.tabs]
        assert labels, "the page has no steps"
        found = {}
        for n, label in enumerate(labels):
            shown = charts(open_step(at, key, n))
            assert not set(shown) & set(found), f"{label}: a chart of another step is shown too"
            found.update(shown)
        return found

    return collect


@pytest.fixture(scope="session")
def gpu_data(tmp_path_factory) -> Path:
    """The GPU run's prepared folder (gpu_run prepare) for synthetic pairs."""
    out = tmp_path_factory.mktemp("gpu-data") / "data"
    prepare_synthetic(out)
    return out
