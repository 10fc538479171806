"""Checkpoints load only from safetensors + JSON: round trips, refused pickles, damaged files, and
the app's checkpoint discovery (no path from the page, no symlink out of the configured roots)."""

from __future__ import annotations

import json
import os
import pickle
import shutil
from pathlib import Path

import pytest
import torch
from safetensors import safe_open

from transformer_viz.checkpoints import CheckpointError, load_checkpoint, save_checkpoint
from transformer_viz.cli import main


def logits(model, src=(5, 9, 17, 23, 2), tgt=(1, 30, 41, 7)) -> torch.Tensor:
    with torch.no_grad():
        return model(torch.tensor([src]), torch.tensor([tgt]))  # (1, T, V)


def copy_checkpoint(checkpoint_dir: Path, tmp_path: Path, name: str = "copy") -> Path:
    return Path(shutil.copytree(checkpoint_dir, tmp_path / name))


# --- round trips ----------------------------------------------------------------------------------


def test_float32_round_trip_is_exact(tiny_model, tokenizer, tmp_path):
    save_checkpoint(tmp_path / "f32", tiny_model, tokenizer, {"src_lang": "de"})
    ckpt = load_checkpoint(tmp_path / "f32")
    assert torch.equal(logits(ckpt.model), logits(tiny_model))
    assert not ckpt.model.training
    assert ckpt.metadata["src_lang"] == "de" and ckpt.metadata["weights_dtype"] == "float32"
    assert ckpt.tokenizer("ein mann")["input_ids"] == tokenizer("ein mann")["input_ids"]


def test_float16_round_trip_is_close(tiny_model, tokenizer, tmp_path):
    save_checkpoint(tmp_path / "f16", tiny_model, tokenizer, half=True)
    with safe_open(str(tmp_path / "f16" / "model.safetensors"), framework="pt") as f:
        assert {f.get_slice(k).get_dtype() for k in f.keys()} == {"F16"}
    ckpt = load_checkpoint(tmp_path / "f16")
    assert next(ckpt.model.parameters()).dtype == torch.float32  # computed in float32
    expected, got = logits(tiny_model), logits(ckpt.model)
    assert not torch.equal(got, expected)  # the weights really were rounded
    torch.testing.assert_close(got, expected, rtol=0, atol=2e-2)
    assert torch.equal(got.argmax(-1), expected.argmax(-1))


def test_the_unique_state_dict_holds_each_tied_tensor_once_and_copies_nothing(tiny_model):
    """unique_state_dict: the model's own tensors (training keeps its copies of them on the
    training device), each tied tensor under one name; state_dict_for_saving writes the same
    names and values."""
    from transformer_viz.checkpoints import state_dict_for_saving, unique_state_dict

    state, unique = tiny_model.state_dict(), unique_state_dict(tiny_model)
    params = dict(tiny_model.named_parameters())  # shared parameters under their first name
    assert tiny_model.cfg.tie_embeddings and len(unique) < len(state)
    assert set(params) <= set(unique) and len(set(state) - set(unique)) == 1
    assert all(unique[name].data_ptr() == p.data_ptr() for name, p in params.items())
    saved = state_dict_for_saving(tiny_model)
    assert list(saved) == list(unique)
    assert all(torch.equal(saved[name], t) for name, t in unique.items())


def test_load_in_bfloat16(checkpoint_dir, tiny_model):
    ckpt = load_checkpoint(checkpoint_dir, dtype="bfloat16")
    assert {p.dtype for p in ckpt.model.parameters()} == {torch.bfloat16}
    expected = logits(tiny_model)
    torch.testing.assert_close(logits(ckpt.model).float(), expected, rtol=0,
                               atol=0.05 * expected.abs().max().item())
    with pytest.raises(CheckpointError, match="dtype must be one of float32, bfloat16"):
        load_checkpoint(checkpoint_dir, dtype="float8")


# --- pickles are never opened -------------------------------------------------------------------


class Payload:
    """Unpickling this creates a directory: proof that a pickle was opened."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return os.mkdir, (str(self.marker),)


@pytest.fixture()
def no_unpickling(monkeypatch):
    """Fail the test at once if anything tries to unpickle."""

    def forbidden(*args, **kwargs):
        raise AssertionError("a pickle was opened")

    monkeypatch.setattr(torch, "load", forbidden)
    monkeypatch.setattr(pickle, "load", forbidden)
    monkeypatch.setattr(pickle, "loads", forbidden)
    monkeypatch.setattr(pickle, "Unpickler", forbidden)


def write_payload(path: Path, marker: Path) -> Path:
    path.write_bytes(pickle.dumps(Payload(marker)))
    return path


def assert_refused_unopened(command: str, path: Path, word: str, capsys, marker: Path) -> None:
    """The command line refuses the path with exit code 2 and a message naming ``word``, no
    traceback, and the payload never ran."""
    assert main([command, "--checkpoint", str(path), "ein mann"]) == 2
    err = capsys.readouterr().err
    assert word in err and "Traceback" not in err
    assert not marker.exists()


def test_the_payload_is_real(tmp_path):
    marker = tmp_path / "control-marker"
    pickle.loads(pickle.dumps(Payload(marker)))
    assert marker.is_dir()  # so the tests below would notice an unpickling


@pytest.mark.parametrize("suffix", [".pt", ".bin", ".pkl"])
def test_directory_with_only_a_pickle_is_refused(suffix, checkpoint_dir, tmp_path,
                                                 no_unpickling, capsys):
    marker = tmp_path / "marker"
    path = copy_checkpoint(checkpoint_dir, tmp_path)
    (path / "model.safetensors").unlink()
    write_payload(path / f"pytorch_model{suffix}", marker)
    with pytest.raises(CheckpointError, match="only pickle weights.*never opened"):
        load_checkpoint(path)
    assert_refused_unopened("translate", path, "never opened", capsys, marker)


@pytest.mark.parametrize("suffix", [".pt", ".bin", ".pkl", ".PT"])
def test_pickle_file_as_checkpoint_path_is_refused(suffix, tmp_path, no_unpickling, capsys):
    marker = tmp_path / "marker"
    path = write_payload(tmp_path / f"model{suffix}", marker)
    with pytest.raises(CheckpointError, match="is a pickle file.*never loaded"):
        load_checkpoint(path)
    assert_refused_unopened("trace", path, "pickle", capsys, marker)


def test_pickle_beside_safetensors_is_ignored(checkpoint_dir, tiny_model, tmp_path, no_unpickling):
    marker = tmp_path / "marker"
    path = copy_checkpoint(checkpoint_dir, tmp_path)
    write_payload(path / "pytorch_model.bin", marker)
    ckpt = load_checkpoint(path)
    assert torch.equal(logits(ckpt.model), logits(tiny_model))
    assert not marker.exists()


# --- damaged checkpoints give a clear CheckpointError -------------------------------------------


def test_truncated_safetensors(checkpoint_dir, tmp_path):
    path = copy_checkpoint(checkpoint_dir, tmp_path)
    weights = path / "model.safetensors"
    data = weights.read_bytes()
    for size in (len(data) - 100, len(data) // 2, 100, 7, 0):
        weights.write_bytes(data[:size])
        with pytest.raises(CheckpointError, match="damaged or truncated"):
            load_checkpoint(path)


def test_shapes_that_do_not_match_the_config_name_the_tensor(checkpoint_dir, tmp_path):
    path = copy_checkpoint(checkpoint_dir, tmp_path)
    config = json.loads((path / "config.json").read_text())
    config["d_ff"] *= 2
    (path / "config.json").write_text(json.dumps(config))
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(path)
    message = str(info.value)
    assert "does not match config.json" in message
    assert ("decoder_layers.0.ffn.w_1.weight has shape (64, 32), config.json needs (128, 32)"
            in message)
    # 12 tensors change shape with d_ff: 5 named, the count of the rest
    assert "(and 7 more)" in message


def test_a_layer_missing_from_the_weights(checkpoint_dir, tmp_path):
    path = copy_checkpoint(checkpoint_dir, tmp_path)
    config = json.loads((path / "config.json").read_text())
    config["N"] = 3
    (path / "config.json").write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match="missing tensor encoder_layers.2"):
        load_checkpoint(path)


@pytest.mark.parametrize("text, reason", [
    ("{not json", "not a valid model config"),
    ("[1, 2, 3]", "expected a JSON object"),
    ("", "not a valid model config"),
    ('{"d_model": 32, "h": 0}', "not a valid model config"),
    ('{"d_model": -8, "h": 4}', "d_model = -8 is outside"),
    ('{"d_model": 32, "h": 4, "N": "2"}', "N must be an integer"),
    ('{"d_model": 32, "h": 4, "N": 2.5}', "N must be an integer"),
    ('{"d_model": 32, "h": 4, "dropout": 7}', "dropout must be a number"),
    ('{"vocab_size": 1000000, "d_model": 8192, "d_ff": 65536, "h": 8, "N": 64}', "parameters"),
    ('{"d_model": 32, "h": 4, "evil": 1}', "unknown config fields"),
    ('{"d_model": 32, "h": 4, "pad_id": 5}', "pad_id = 5 is outside"),
])
def test_broken_config(text, reason, checkpoint_dir, tmp_path):
    path = copy_checkpoint(checkpoint_dir, tmp_path)
    (path / "config.json").write_text(text)
    with pytest.raises(CheckpointError, match=reason):
        load_checkpoint(path)


def test_missing_or_broken_tokenizer(checkpoint_dir, tmp_path):
    path = copy_checkpoint(checkpoint_dir, tmp_path)
    tokenizer_json = path / "tokenizer" / "tokenizer.json"
    original = tokenizer_json.read_text()
    tokenizer_json.write_text(original[: len(original) // 2])
    with pytest.raises(CheckpointError, match="tokenizer.json cannot be loaded"):
        load_checkpoint(path)
    tokenizer_json.write_text("{}")
    with pytest.raises(CheckpointError, match="tokenizer.json cannot be loaded"):
        load_checkpoint(path)
    # special tokens at other IDs would turn typed text into control tokens: refused
    data = json.loads(original)
    vocab = data["model"]["vocab"]
    vocab["<pad>"], vocab["<s>"] = vocab["<s>"], vocab["<pad>"]
    for token in data["added_tokens"]:
        token["id"] = vocab[token["content"]]
    tokenizer_json.write_text(json.dumps(data))
    with pytest.raises(CheckpointError, match="expected 0"):
        load_checkpoint(path)
    shutil.rmtree(path / "tokenizer")
    with pytest.raises(CheckpointError, match="has no tokenizer.json"):
        load_checkpoint(path)


def test_other_damage(checkpoint_dir, tmp_path, tokenizer, capsys):
    path = copy_checkpoint(checkpoint_dir, tmp_path)
    (path / "metadata.json").write_text("[]")
    with pytest.raises(CheckpointError, match="must hold a JSON object"):
        load_checkpoint(path)
    (path / "metadata.json").write_text("{broken")
    with pytest.raises(CheckpointError, match="metadata.json is not valid JSON"):
        load_checkpoint(path)
    with pytest.raises(CheckpointError, match="does not exist"):
        load_checkpoint(tmp_path / "nowhere")
    with pytest.raises(CheckpointError, match="give its directory"):
        load_checkpoint(checkpoint_dir / "model.safetensors")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(CheckpointError, match="has no model.safetensors"):
        load_checkpoint(empty)
    # NaN weights load as a model that prints garbage: refuse them
    from transformer_viz.models.transformer.config import preset
    from transformer_viz.models.transformer.model import Transformer

    model = Transformer(preset("tiny", vocab_size=len(tokenizer))).eval()
    with torch.no_grad():
        model.encoder_layers[1].ffn.w_2.weight[0, 0] = float("nan")
    save_checkpoint(tmp_path / "nan", model, tokenizer)
    with pytest.raises(CheckpointError,
                       match="NaN or infinite values in encoder_layers.1.ffn.w_2.weight"):
        load_checkpoint(tmp_path / "nan")
    assert main(["translate", "--checkpoint", str(tmp_path / "nan"), "ein"]) == 2
    assert "Traceback" not in capsys.readouterr().err


# --- the app finds checkpoints by name, inside its roots only -----------------------------------


def test_list_checkpoints_stays_inside_the_roots(checkpoint_dir, tmp_path, monkeypatch):
    from transformer_viz.app import catalogue, loaders

    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    shutil.copytree(checkpoint_dir, root / "good")
    shutil.copytree(checkpoint_dir, outside / "secret")
    # a symlink out of the root
    (root / "escape").symlink_to(outside / "secret", target_is_directory=True)
    (root / "alias").symlink_to(root / "good", target_is_directory=True)  # a symlink inside: fine
    shutil.copytree(checkpoint_dir, root / "a..b")
    shutil.copytree(checkpoint_dir, root / ".hidden")
    inner = root / "inner-link"
    shutil.copytree(checkpoint_dir, inner)
    (inner / "model.safetensors").unlink()
    # a file pointing out
    (inner / "model.safetensors").symlink_to(outside / "secret" / "model.safetensors")
    (root / "no-config").mkdir()
    monkeypatch.setenv(catalogue.CHECKPOINTS_ENV, f"{root}{os.pathsep}{tmp_path / 'missing-root'}")

    found = catalogue.list_checkpoints()
    assert found == {"good": (root / "good").resolve(), "alias": (root / "good").resolve()}
    with pytest.raises(CheckpointError, match="unknown checkpoint"):
        loaders.get_checkpoint("escape")
    with pytest.raises(CheckpointError, match="unknown checkpoint"):
        loaders.get_checkpoint("../outside/secret")
    # a root that is itself a checkpoint directory
    monkeypatch.setenv(catalogue.CHECKPOINTS_ENV, str(root / "good"))
    assert list(catalogue.list_checkpoints()) == ["good"]
    # without the variable: only the project's checkpoints/
    monkeypatch.delenv(catalogue.CHECKPOINTS_ENV)
    assert catalogue.checkpoint_roots() == [catalogue.CHECKPOINTS_DIR]
    # in a clone
    assert catalogue.CHECKPOINTS_DIR == Path(__file__).resolve().parents[2] / "checkpoints"
