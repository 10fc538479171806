"""transformers' Marian models: our export loads in MarianMTModel and translates as our engine does,
and a random MarianMTModel (with a SentencePiece vocabulary trained here) imports into our
Transformer with the same logits and outputs. Nothing is downloaded."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest
import torch

from tests.conftest import synthetic_pairs
from transformer_viz.checkpoints import CheckpointError, load_checkpoint
from transformer_viz.checkpoints.marian import marian_positions, residual_permutation
from transformer_viz.engine import run_sentence, traced_forward
from transformer_viz.generation.decoding import beam_search, greedy_decode, max_output_length
from transformer_viz.generation.decoding_defaults import GenerationDefaults
from transformer_viz.interop.marian_export import export_hf
from transformer_viz.text.tokenizer import decode, encode_source

transformers = pytest.importorskip("transformers")
sentencepiece = pytest.importorskip("sentencepiece")

ATOL = 1e-4  # logits: ours against transformers'
SENTENCES = ["ein mann spielt im park .", "zwei kinder sitzen am strand mit einem ball .",
             "eine frau läuft .", "der hund spielt auf der straße mit einem roten ball ."]
MARIAN_LAYERS = 2  # the tiny preset's N: the trace names are then those of the tiny model


# --- a random Marian model with its own SentencePiece vocabulary ----------------------------------

def _train_spm(texts: list[str], vocab_size: int) -> bytes:
    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(sentence_iterator=iter(texts), model_writer=model,
                                             vocab_size=vocab_size, model_type="unigram",
                                             character_coverage=1.0, num_threads=1, minloglevel=2)
    return model.getvalue()


@pytest.fixture(scope="module")
def marian_dir(tmp_path_factory):
    """A random MarianMTModel (swish, scaled embeddings, a random final_logits_bias and LayerNorms)
    saved with save_pretrained, beside a SentencePiece model trained on 600 sentences and a
    Marian-style vocab.json (</s> 0, <unk> 1, …, <pad> last)."""
    path = tmp_path_factory.mktemp("marian") / "opus-tiny"
    path.mkdir()
    pairs = synthetic_pairs(300, seed=5)
    spm = _train_spm([s for s, _ in pairs] + [t for _, t in pairs], vocab_size=50)
    for name in ("source.spm", "target.spm"):
        (path / name).write_bytes(spm)
    processor = sentencepiece.SentencePieceProcessor(model_proto=spm)
    pieces = [processor.id_to_piece(i) for i in range(processor.get_piece_size())]
    ordinary = [p for p in pieces if p not in ("<unk>", "<s>", "</s>")]
    vocab = {"</s>": 0, "<unk>": 1, **{p: i + 2 for i, p in enumerate(ordinary)}}
    vocab["<pad>"] = len(vocab)
    (path / "vocab.json").write_text(json.dumps(vocab))
    (path / "tokenizer_config.json").write_text(json.dumps({"source_lang": "de",
                                                            "target_lang": "en"}))
    config = transformers.MarianConfig(
        vocab_size=len(vocab), d_model=32, encoder_layers=MARIAN_LAYERS,
        decoder_layers=MARIAN_LAYERS, encoder_attention_heads=4, decoder_attention_heads=4,
        encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=64,
        activation_function="swish", scale_embedding=True, init_std=0.3,
        pad_token_id=vocab["<pad>"], decoder_start_token_id=vocab["<pad>"], eos_token_id=0,
        forced_eos_token_id=0)
    torch.manual_seed(0)
    model = transformers.MarianMTModel(config).eval()
    with torch.no_grad():
        # LayerNorms away from (1, 0), so that their permutation is tested
        for module in model.modules():
            if isinstance(module, torch.nn.LayerNorm):
                module.weight.normal_(1.0, 0.2)
                module.bias.normal_(0.0, 0.2)
        model.final_logits_bias.normal_(0.0, 1.0)
        # <pad> would win often, were it not banned
        model.final_logits_bias[0, vocab["<pad>"]] = 6.0
    # as Marian models are published: <pad> is never written
    model.generation_config.bad_words_ids = [[vocab["<pad>"]]]
    model.save_pretrained(str(path))
    return path, model


@pytest.fixture(scope="module")
def imported(marian_dir):
    return load_checkpoint(marian_dir[0])


def _hf_logits(model, src_ids: list[int], tgt_ids: list[int]) -> torch.Tensor:
    with torch.no_grad():
        return model(input_ids=torch.tensor([src_ids]),
                     decoder_input_ids=torch.tensor([tgt_ids])).logits[0]


def _hf_generate(model, src_ids: list[int], max_new: int, **kwargs) -> list[int]:
    """transformers' output without the start token and after </s>; no forced </s> at the length
    cap, which our decoding does not have."""
    with torch.no_grad():
        out = model.generate(torch.tensor([src_ids]), max_length=1 + max_new,
                             forced_eos_token_id=None, do_sample=False, **kwargs)[0].tolist()[1:]
    eos, pad = model.config.eos_token_id, model.config.pad_token_id
    return [i for i in out[: out.index(eos) if eos in out else len(out)] if i != pad]


def test_the_permutation_turns_our_sinusoidal_table_into_marians(marian_dir):
    d = 32
    table = transformers.models.marian.modeling_marian.MarianSinusoidalPositionalEmbedding(
        64, d).create_weight()
    assert torch.allclose(marian_positions(64, d), table, atol=1e-6)
    perm = residual_permutation(d)
    assert (perm[: d // 2].tolist() == list(range(0, d, 2))
            and perm[d // 2:].tolist() == list(range(1, d, 2)))


def test_import_maps_the_config(imported, marian_dir):
    cfg, hf_cfg = imported.config, marian_dir[1].config
    assert ((cfg.d_model, cfg.d_ff, cfg.h, cfg.N, cfg.max_len, cfg.vocab_size)
            == (32, 64, 4, 2, 64, hf_cfg.vocab_size))
    assert ((cfg.activation, cfg.scale_embedding, cfg.logits_bias, cfg.pre_ln)
            == ("swish", True, True, False))
    assert cfg.bos_id == cfg.pad_id == hf_cfg.pad_token_id and cfg.eos_id == 0 and cfg.unk_id == 1
    assert (imported.generation.beam_scoring == "hf"
            and imported.generation.suppress_ids == (cfg.pad_id,))
    assert (imported.metadata["src_lang"], imported.metadata["tgt_lang"]) == ("de", "en")


@pytest.mark.filterwarnings("ignore:Recommended")
def test_import_tokenizes_as_marians_tokenizer(imported, marian_dir):
    reference = transformers.MarianTokenizer(*(str(marian_dir[0] / n)
                                               for n in ("source.spm", "target.spm",
                                                                                  "vocab.json")))
    # capitals, digits, a dash: <unk>
    for sentence in SENTENCES + ["Ein Mann spielt – mit 3 Bällen!"]:
        encoded = encode_source(imported.tokenizer, sentence, imported.config.max_len)
        assert encoded.ids == reference(sentence)["input_ids"], sentence
        assert encoded.tokens[-1] == "</s>"
        # the offsets cover the text: each piece's span is the text it came from
        spans = imported.tokenizer(sentence, return_offsets_mapping=True)["offset_mapping"]
        assert ("".join(sentence[a:b] for a, b in spans).replace(" ", "")
                == sentence.replace(" ", ""))
        # as our engine shows a translation: up to </s>, <unk> written out
        assert decode(imported.tokenizer, encoded.ids) == reference.decode(encoded.ids[:-1])
    unknown = encode_source(imported.tokenizer, "Ein Mann spielt – mit 3 Bällen!", 64)
    assert unknown.unknown and imported.config.unk_id in unknown.ids


def test_imported_logits_and_greedy_output_match_transformers(imported, marian_dir):
    model = marian_dir[1]
    for sentence in SENTENCES:
        run = run_sentence(imported, sentence)  # greedy, traced
        expected = _hf_generate(model, run.src_ids,
                                max_output_length(imported.config, len(run.src_ids)))
        assert run.decoding.tokens[0] == expected, sentence
        assert run.tgt_ids[0] == model.config.decoder_start_token_id
        theirs = _hf_logits(model, run.src_ids, run.tgt_ids)
        assert (run.trace["logits"][0] - theirs).abs().max() < ATOL
    # not all trivially short
    assert any(len(run_sentence(imported, s).decoding.tokens[0]) > 2 for s in SENTENCES)


def test_the_pad_ban_of_the_generation_config_matters(imported):
    """Without generation_config.json's bad_words_ids the random model would write <pad> (its logit
    bias is high); with it, never."""
    cfg, pad = imported.config, imported.config.pad_id
    chosen = {}
    for suppress in ((), imported.generation.suppress_ids):
        chosen[suppress] = [i for s in SENTENCES for step in greedy_decode(
            imported.model,
            torch.tensor([encode_source(imported.tokenizer, s, cfg.max_len).ids]), 20,
            suppress=suppress).steps for i in step.chosen]
    assert pad in chosen[()] and pad not in chosen[(pad,)]


def test_imported_beam_search_matches_transformers(imported, marian_dir):
    model, cfg = marian_dir[1], imported.config
    for sentence in SENTENCES:
        ids = encode_source(imported.tokenizer, sentence, cfg.max_len).ids
        max_new = max_output_length(cfg, len(ids))
        for beams, alpha, early in ((4, 1.0, False), (3, 0.6, True), (4, 1.4, "never")):
            ours = beam_search(imported.model, torch.tensor([ids]), beams, max_new, alpha,
                               record=False, scoring="hf", early_stopping=early,
                               suppress=imported.generation.suppress_ids)
            assert ours.tokens[0] == _hf_generate(model, ids, max_new, num_beams=beams,
                                                  length_penalty=alpha,
                                                  early_stopping=early), (sentence, beams,
                                                                          alpha, early)


def test_imported_trace_has_every_name_and_shape(imported, tiny_model, sentence_trace):
    """The same names as our own model's trace, with the documented shapes; the decoder starts with
    <pad>, which stays visible to every query."""
    run = run_sentence(imported, SENTENCES[1])
    S, T, h, cfg = len(run.src_ids), len(run.tgt_ids), imported.config.h, imported.config
    assert set(run.trace.shapes()) == set(sentence_trace[2].shapes())
    assert run.trace["encoder.1.self_attn.weights"].shape == (1, h, S, S)
    assert run.trace["decoder.1.cross_attn.weights"].shape == (1, h, T, S)
    assert run.trace["decoder.0.ffn.hidden"].shape == (1, T, cfg.d_ff)
    assert run.trace["logits"].shape == (1, T, cfg.vocab_size)
    assert run.trace["tgt.token_ids"][0, 0] == cfg.pad_id
    assert bool(run.trace["decoder.0.self_attn.mask"][..., 0].all())
    assert float(run.trace["decoder.0.self_attn.weights"][0, :, :, 0].min()) > 0.0
    assert run.trace["decoder.0.ffn.hidden"].min() < 0  # swish, not ReLU


def test_the_app_lists_and_opens_a_marian_directory(marian_dir, monkeypatch):
    from transformer_viz.app import about, catalogue

    monkeypatch.setenv(catalogue.CHECKPOINTS_ENV, str(marian_dir[0].parent))
    assert list(catalogue.list_checkpoints()) == [marian_dir[0].name]
    cfg, metadata = about.checkpoint_info(marian_dir[0].name)
    assert cfg.logits_bias and metadata["tgt_lang"] == "en"


@pytest.mark.filterwarnings("ignore:Recommended")
def test_every_page_and_step_runs_on_an_imported_marian_model(make_app, marian_dir, monkeypatch,
                                                              every_step):
    """The sidebar's only model is the Marian directory; every page of the navigation, every step of
    each, draws without an error (the RNN and ViT pages load their own models, which this root does
    not have)."""
    from tests.support.apptest import rerun
    from transformer_viz.app import catalogue, loaders
    from transformer_viz.app.navigation import PAGES

    at = make_app()
    monkeypatch.setenv(catalogue.CHECKPOINTS_ENV, str(marian_dir[0].parent))
    rerun(at)
    drawn = 0
    for page in PAGES:
        at.switch_page(page.file)
        rerun(at)
        assert [t.value for t in at.title] == [page.title], page.file
        if page.url_path not in ("rnn", "vit") and at.tabs:
            drawn += len(every_step(at, f"{page.url_path}_step"))
    assert drawn > 30 and loaders.model_loaded(marian_dir[0].name)


def test_translate_and_trace_on_the_command_line_read_a_marian_directory(imported, marian_dir,
                                                                         capsys, monkeypatch):
    """A sentence, standard input (batched: the random model's loops run to the batch's longer cap)
    and the trace JSON give what the engine gives (the generation config asks for no beam: greedy,
    <pad> banned)."""
    from tests.unit.test_cli import run_cli
    from transformer_viz.generation.evaluation import translate_texts

    path = str(marian_dir[0])
    expected = run_sentence(imported, SENTENCES[0]).translation
    assert (run_cli(capsys, "translate", "--checkpoint", path, SENTENCES[0])[:2]
            == (0, expected + "\n"))
    code, out, _ = run_cli(capsys, "translate", "--checkpoint", path,
                           stdin="\n".join(SENTENCES[:2]) + "\n", monkeypatch=monkeypatch)
    no_pad = GenerationDefaults(suppress_ids=(imported.config.pad_id,))
    batched = translate_texts(imported.model, imported.tokenizer, SENTENCES[:2], no_pad)
    assert (code, out.splitlines()) == (0, batched)
    code, out, _ = run_cli(capsys, "trace", "--checkpoint", path, SENTENCES[0])
    trace = json.loads(out)
    assert (code == 0 and trace["target_ids"][0] == imported.config.pad_id
            and trace["translation"] == expected)
    assert (trace["shapes"]["decoder.1.cross_attn.weights"]
            == [1, 4, len(trace["target_ids"]), len(trace["source_ids"])])


# --- refusals -------------------------------------------------------------------------------------

def _copy_with(src: Path, dst: Path, config_changes: dict | None = None,
               drop_weights: bool = False) -> Path:
    dst.mkdir()
    for f in src.iterdir():
        if not (drop_weights and f.name == "model.safetensors"):
            (dst / f.name).write_bytes(f.read_bytes())
    if config_changes:
        data = json.loads((dst / "config.json").read_text())
        (dst / "config.json").write_text(json.dumps({**data, **config_changes}))
    return dst


def test_a_marian_directory_with_only_pickle_weights_is_refused(marian_dir, tmp_path):
    path = _copy_with(marian_dir[0], tmp_path / "pickled", drop_weights=True)
    (path / "pytorch_model.bin").write_bytes(b"not opened")
    with pytest.raises(CheckpointError, match=r"only pickle weights \(pytorch_model.bin\)"):
        load_checkpoint(path)


@pytest.mark.parametrize("changes, named", [
    ({"normalize_before": True}, "normalize_before"),
    ({"activation_function": "tanh"}, "activation_function"),
    ({"decoder_layers": 3}, "encoder_layers = 2 and decoder_layers = 3"),
    ({"share_encoder_decoder_embeddings": False}, "share_encoder_decoder_embeddings"),
    ({"architectures": ["MarianForCausalLM"]}, "architectures"),
])
def test_an_unsupported_marian_option_is_refused_by_name(marian_dir, tmp_path, changes, named):
    path = _copy_with(marian_dir[0], tmp_path / "odd", changes)
    with pytest.raises(CheckpointError, match=named):
        load_checkpoint(path)


def test_a_gelu_marian_model_imports_exactly(marian_dir, tmp_path):
    path = _copy_with(marian_dir[0], tmp_path / "gelu",
                      {"activation_function": "gelu", "scale_embedding": False})
    ours, theirs = (load_checkpoint(path),
                    transformers.MarianMTModel.from_pretrained(str(path)).eval())
    assert ours.config.activation == "gelu" and not ours.config.scale_embedding
    run = run_sentence(ours, SENTENCES[0])
    assert ((run.trace["logits"][0] - _hf_logits(theirs, run.src_ids, run.tgt_ids)).abs().max()
            < ATOL)


# --- export ---------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def exported(tiny_checkpoint, tmp_path_factory):
    path = export_hf(tiny_checkpoint, tmp_path_factory.mktemp("export") / "tiny-marian")
    model = transformers.MarianMTModel.from_pretrained(str(path)).eval()
    return path, model, transformers.AutoTokenizer.from_pretrained(str(path))


def test_export_writes_a_transformers_directory(exported, tiny_checkpoint):
    path, model, hf_tokenizer = exported
    assert {"config.json", "model.safetensors", "generation_config.json", "tokenizer.json"} <= {
        p.name for p in path.iterdir()}
    assert not any(p.suffix in (".bin", ".pt") for p in path.iterdir())
    cfg = tiny_checkpoint.config
    assert (model.config.decoder_start_token_id == cfg.bos_id
            and model.config.activation_function == "relu")
    assert model.config.max_position_embeddings == cfg.max_len and model.config.scale_embedding
    # AutoTokenizer writes our encoder input, </s> included
    for sentence in SENTENCES + ["ein <pad> hund </s>"]:
        assert (hf_tokenizer(sentence)["input_ids"]
                == encode_source(tiny_checkpoint.tokenizer, sentence, 64).ids)


def test_exported_model_computes_our_logits_and_translations(exported, tiny_checkpoint):
    path, model, hf_tokenizer = exported
    cfg = tiny_checkpoint.config
    for sentence in SENTENCES:
        src_ids = hf_tokenizer(sentence)["input_ids"]
        max_new = max_output_length(cfg, len(src_ids))
        greedy = greedy_decode(tiny_checkpoint.model, torch.tensor([src_ids]), max_new,
                               record=False).tokens[0]
        assert greedy == _hf_generate(model, src_ids, max_new, num_beams=1)
        tgt_ids = [cfg.bos_id] + greedy
        ours = traced_forward(tiny_checkpoint.model, src_ids, tgt_ids)["logits"][0]
        assert (ours - _hf_logits(model, src_ids, tgt_ids)).abs().max() < ATOL
        beam = beam_search(tiny_checkpoint.model, torch.tensor([src_ids]), 4, max_new, 1.0,
                           record=False, scoring="hf")
        assert (beam.tokens[0]
                == _hf_generate(model, src_ids, max_new, num_beams=4, length_penalty=1.0))


def test_an_exported_directory_imports_back_with_the_same_logits(exported, tiny_checkpoint):
    back = load_checkpoint(exported[0])
    assert back.config.logits_bias and back.config.bos_id == tiny_checkpoint.config.bos_id
    for sentence in SENTENCES[:2]:
        a, b = run_sentence(tiny_checkpoint, sentence), run_sentence(back, sentence)
        assert a.decoding.tokens == b.decoding.tokens and a.translation == b.translation
        assert (a.trace["logits"] - b.trace["logits"]).abs().max() < 1e-5


def test_export_refuses_a_pre_ln_model(tiny_checkpoint, tmp_path):
    from dataclasses import replace

    from transformer_viz.checkpoints import Checkpoint
    from transformer_viz.models.transformer.model import Transformer

    cfg = replace(tiny_checkpoint.config, pre_ln=True)
    ckpt = Checkpoint(Transformer(cfg), tiny_checkpoint.tokenizer, cfg)
    with pytest.raises(CheckpointError, match="pre_ln = true"):
        export_hf(ckpt, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_export_hf_on_the_command_line(checkpoint_dir, tmp_path, capsys):
    from transformer_viz.cli import main

    assert (main(["export-hf", "--checkpoint", str(checkpoint_dir), "--out", str(tmp_path / "hf")])
            == 0)
    assert (tmp_path / "hf" / "model.safetensors").is_file()
    assert main(["export-hf", "--checkpoint", str(checkpoint_dir.parent / "rnn-de-en"), "--out",
                 str(tmp_path / "rnn")]) == 2
    assert "only Transformer checkpoints" in capsys.readouterr().err


# --- the shipped model on Multi30k ----------------------------------------------------------------

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(os.environ.get("TRANSFORMER_VIZ_DATA", ROOT.parent / "shared" / "data" / "multi30k"))


@pytest.mark.data
def test_exported_shipped_model_translates_50_test_sentences_as_we_do(tmp_path):
    """checkpoints/de-en through export-hf: transformers' greedy and beam (its own beam search, α as
    the length penalty) write the same tokens as our greedy and our beam_search(scoring="hf")."""
    from transformer_viz.text.corpora import read_any_split

    if not (ROOT / "checkpoints" / "de-en" / "model.safetensors").is_file():
        pytest.skip("no shipped checkpoint")
    if not (DATA / "test_2016_flickr.de.gz").is_file():
        pytest.skip(f"{DATA} has no Multi30k (set TRANSFORMER_VIZ_DATA)")
    ckpt = load_checkpoint(ROOT / "checkpoints" / "de-en")
    path = export_hf(ckpt, tmp_path / "de-en")
    model = transformers.MarianMTModel.from_pretrained(str(path)).eval()
    hf_tokenizer = transformers.AutoTokenizer.from_pretrained(str(path))
    beams, alpha = ckpt.generation.num_beams, ckpt.generation.length_penalty
    worst = 0.0
    for source, _ in read_any_split("test_2016_flickr", "de", "en", DATA, limit=50):
        ids = encode_source(ckpt.tokenizer, source, ckpt.config.max_len).ids
        assert hf_tokenizer(source)["input_ids"] == ids
        max_new = max_output_length(ckpt.config, len(ids))
        greedy = greedy_decode(ckpt.model, torch.tensor([ids]), max_new, record=False).tokens[0]
        assert greedy == _hf_generate(model, ids, max_new, num_beams=1), source
        beam = beam_search(ckpt.model, torch.tensor([ids]), beams, max_new, alpha, record=False,
                           scoring="hf")
        # generation_config.json: beam, α
        assert beam.tokens[0] == _hf_generate(model, ids, max_new), source
        tgt = [ckpt.config.bos_id] + beam.tokens[0]
        worst = max(worst, float((traced_forward(ckpt.model, ids, tgt)["logits"][0]
                                  - _hf_logits(model, ids, tgt)).abs().max()))
    assert worst < ATOL
