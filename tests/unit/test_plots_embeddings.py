"""plots/embeddings.py: padding, the embedding rows, the √d_model scaling, cosine similarities,
nearest neighbours."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from tests.support.figures import z_of
from transformer_viz.plots import embeddings as emb

EVIL = ["<script>", "a&b", "▁Hund"]
# the word-start mark shown as ␣, never as "_"
EVIL_ESCAPED = ["0 &lt;script&gt;", "1 a&amp;b", "2 ␣Hund"]


def test_pad_ids_pads_right_and_masks_the_padding():
    padded, mask = emb.pad_ids([5, 6, 2], 6, pad_id=0)
    assert padded == [5, 6, 2, 0, 0, 0]
    assert mask == [True, True, True, False, False, False]
    assert emb.pad_ids([5, 2], 2) == ([5, 2], [True, True])
    with pytest.raises(ValueError):
        emb.pad_ids([5, 6, 2], 2)


def test_padding_figure_shows_ids_mask_and_escaped_labels():
    padded, mask = emb.pad_ids([7, 8, 2], 5)
    fig = emb.padding_figure(["<script>", "x", "</s>"], padded, mask)
    hm = fig.data[0]
    assert z_of(hm).shape == (2, 5)
    assert list(hm.text[0]) == ["7", "8", "2", "0", "0"]
    assert list(hm.text[1]) == ["1", "1", "1", "0", "0"]
    assert (list(hm.x)
            == ["0 &lt;script&gt;", "1 x", "2 &lt;/s&gt;", "3 &lt;pad&gt;", "4 &lt;pad&gt;"])


def test_a_long_padded_sentence_stands_in_two_columns_one_position_a_row():
    """24 four-digit IDs side by side ran into each other at a projector's 16 px."""
    padded, mask = emb.pad_ids(list(range(1000, 1016)) + [2], 24)
    fig = emb.padding_figure([f"t{i}" for i in range(16)] + ["</s>"], padded, mask)
    hm = fig.data[0]
    assert z_of(hm).shape == (24, 2) and list(hm.x) == ["token ID", "padding mask"]
    assert [row[0] for row in hm.text[:2]] == ["1000", "1001"] and list(hm.text[-1]) == ["0", "0"]
    assert list(hm.y)[:2] == ["0 t0", "1 t1"] and len(hm.y) == 24
    assert fig.layout.height == 26 * 24 + 140
    short = emb.padding_figure(["a", "</s>"], *emb.pad_ids([5, 2], emb.MAX_PADDED_ACROSS))
    assert z_of(short.data[0]).shape == (2, emb.MAX_PADDED_ACROSS)


def test_embedding_heatmap_rows_are_tokens_and_labels_are_escaped():
    x = np.arange(3 * 8, dtype=float).reshape(3, 8)
    fig = emb.embedding_heatmap(x, EVIL)
    hm = fig.data[-1]
    assert z_of(hm).shape == (3, 8)
    np.testing.assert_array_equal(z_of(hm), x)
    assert list(hm.y) == EVIL_ESCAPED
    assert "<script>" not in fig.to_json()


def test_scaling_figure_scaled_row_is_raw_times_sqrt_d_model(tiny_model):
    d_model = tiny_model.cfg.d_model
    token_id = 9
    raw = tiny_model.src_embed.weight[token_id].detach().numpy()
    scaled = tiny_model.src_embed(torch.tensor([[token_id]]))[0, 0].detach().numpy()
    fig = emb.scaling_figure(raw, scaled, "<b>", d_model)
    np.testing.assert_allclose(np.asarray(fig.data[1].y),
                               np.asarray(fig.data[0].y) * math.sqrt(d_model), rtol=1e-5)
    assert "&lt;b&gt;" in fig.layout.title.text and "<b>" not in fig.layout.title.text


def test_cosine_similarity_matrix():
    x = np.array([[1.0, 0.0], [2.0, 0.0], [0.0, 3.0], [-1.0, 0.0], [0.0, 0.0]])
    sim = emb.cosine_similarity_matrix(x)
    expected = np.array([[1, 1, 0, -1, 0], [1, 1, 0, -1, 0], [0, 0, 1, 0, 0], [-1, -1, 0, 1, 0],
                         [0, 0, 0, 0, 0]])
    np.testing.assert_allclose(sim, expected, atol=1e-12)
    fig = emb.cosine_heatmap(sim, ["a", "b", "<c>", "d", "e"])
    assert fig.data[-1].zmin == -1 and fig.data[-1].zmax == 1
    assert list(fig.data[-1].x)[2] == "2 &lt;c&gt;"


def test_nearest_neighbours_token_itself_first_then_by_cosine(tiny_model):
    weight = tiny_model.src_embed.weight.detach().numpy()  # (V, d_model)
    ids = [5, 9, 14, 9]
    top, sims = emb.nearest_neighbours(weight, ids, k=4)
    assert top.shape == sims.shape == (4, 4)
    np.testing.assert_array_equal(top[:, 0], ids)
    np.testing.assert_allclose(sims[:, 0], 1.0, atol=1e-9)
    assert np.all(np.diff(sims, axis=1) <= 1e-12)  # descending
    # Brute force over the whole vocabulary for one token.
    unit = weight / np.linalg.norm(weight, axis=1, keepdims=True)
    brute = unit @ unit[14]
    np.testing.assert_array_equal(top[2], np.argsort(-brute)[:4])
    np.testing.assert_allclose(sims[2], np.sort(brute)[::-1][:4], atol=1e-6)


def test_nearest_neighbours_keeps_the_token_first_when_another_row_is_parallel():
    weight = np.array([[1.0, 0.0], [2.0, 0.0], [0.0, 1.0], [1.0, 1.0]])  # rows 0 and 1 are parallel
    top, sims = emb.nearest_neighbours(weight, [1, 0], k=3)
    assert top[0, 0] == 1 and top[1, 0] == 0
    assert set(top[0, :2]) == {0, 1}
    np.testing.assert_allclose(sims[:, :2], 1.0)
    assert top[0, 2] == 3 and sims[0, 2] == pytest.approx(1 / math.sqrt(2))


def test_neighbours_figure_escapes_neighbour_tokens():
    fig = emb.neighbours_figure(["<s>"], [["<s>", "<img src=x>"]], np.array([[1.0, 0.5]]))
    hm = fig.data[0]
    assert list(hm.text[0]) == ["&lt;s&gt;", "&lt;img src=x&gt;"]
    assert list(hm.y) == ["0 &lt;s&gt;"]
    assert "<img" not in fig.to_json()


def test_a_wide_dimension_axis_gets_at_most_8_ticks():
    """16 three-digit ticks ran into each other at a projector's 16 px in a 731 px column."""
    fig = emb.embedding_heatmap(np.zeros((3, 256)), ["a", "b", "c"])
    assert fig.layout.xaxis.dtick == 32 and 256 / fig.layout.xaxis.dtick <= 8
