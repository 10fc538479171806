"""Colours everyone can read: every pair of colours a figure must keep apart stays apart under
protanopia, deuteranopia and tritanopia, simulated with Machado, Oliveira and Fernandes (2009)'s
matrices at full severity on linear RGB; the colour scales keep their order of lightness and their
ends apart. Distances are CIE76 ΔE in CIELAB (2.3 is a just-noticeable difference)."""

from __future__ import annotations

import itertools

import numpy as np
import plotly.colors
import pytest

from transformer_viz.plots import common
from transformer_viz.plots.detr import QUERY_COLOURS

MACHADO = {
    "protanopia": [[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216],
                   [-0.003882, -0.048116, 1.051998]],
    "deuteranopia": [[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413],
                     [-0.011820, 0.042940, 0.968881]],
    "tritanopia": [[1.255528, -0.076749, -0.178779], [-0.078411, 0.930809, 0.147602],
                   [0.004733, 0.691367, 0.303900]],
}
VISION = ["normal", *MACHADO]
# Colours that one figure draws side by side for different things (plots/common.py's palette).
CATEGORIES = {
    "series and what is pointed out": [common.BLUE, common.ORANGE, common.GREEN, common.PURPLE],
    "a series and its twin": [common.BLUE, common.LIGHT_BLUE],
    "the pointed-out and its twin": [common.ORANGE, common.LIGHT_ORANGE],
    "signed bars": [common.POSITIVE, common.NEGATIVE],
    "the three kinds of heads (plots/heads.py)": [common.BLUE, common.GREEN, common.PURPLE],
    "the recurrent models' series (plots/rnn.py)": [common.LIGHT_BLUE, common.BLUE, common.ORANGE,
                                                    common.GREEN, common.PURPLE],
    "a mask": [common.ALLOWED_COLOUR, common.MASKED_COLOUR],
    "the DETR's object queries (plots/detr.py)": list(QUERY_COLOURS),
    "the architecture's blocks": [common.EMBEDDING_FILL, common.ENCODER_FILL, common.DECODER_FILL,
                                  common.OUTPUT_FILL, common.ADD_NORM_FILL],
}
MIN_DELTA_E = {"series and what is pointed out": 12.0, "a series and its twin": 12.0,
               "the pointed-out and its twin": 12.0, "signed bars": 20.0, "a mask": 12.0,
               "the three kinds of heads (plots/heads.py)": 12.0,
               "the recurrent models' series (plots/rnn.py)": 12.0,
               "the DETR's object queries (plots/detr.py)": 12.0,
               "the architecture's blocks": 5.0}  # blocks also carry their names
SCALES = [common.SEQUENTIAL, common.PROJECTOR_SEQUENTIAL, common.DIVERGING]


def _rgb(colour: str) -> np.ndarray:
    if colour.startswith("#"):
        colour = colour.lstrip("#")
        return np.array([int(colour[i:i + 2], 16) for i in (0, 2, 4)]) / 255.0
    return np.array(plotly.colors.unlabel_rgb(colour)) / 255.0


def _linear(rgb: np.ndarray) -> np.ndarray:
    return np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)


def seen(colour: str, vision: str) -> np.ndarray:
    """CIELAB (D65) of ``colour`` as seen with ``vision``."""
    rgb = _linear(_rgb(colour))
    if vision != "normal":
        rgb = np.clip(np.asarray(MACHADO[vision]) @ rgb, 0.0, 1.0)
    xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722],
                    [0.0193, 0.1192, 0.9505]]) @ rgb / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > (6 / 29) ** 3, np.cbrt(xyz), xyz / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def delta_e(a: str, b: str, vision: str) -> float:
    return float(np.linalg.norm(seen(a, vision) - seen(b, vision)))


@pytest.mark.parametrize("vision", VISION)
@pytest.mark.parametrize("group", CATEGORIES)
def test_colours_a_figure_keeps_apart_stay_apart(group, vision):
    close = [(a, b, round(delta_e(a, b, vision), 1)) for a,
             b in itertools.combinations(CATEGORIES[group], 2)
             if delta_e(a, b, vision) < MIN_DELTA_E[group]]
    assert not close, f"{group} under {vision}: {close}"


def _scale(name: str, n: int = 11) -> list[str]:
    return plotly.colors.sample_colorscale(plotly.colors.get_colorscale(name), np.linspace(0, 1, n))


@pytest.mark.parametrize("vision", VISION)
@pytest.mark.parametrize("name", SCALES)
def test_colour_scales_keep_their_order_and_their_ends_apart(name, vision):
    colours = _scale(name)
    lightness = np.array([seen(c, vision)[0] for c in colours])
    ends = delta_e(colours[0], colours[-1], vision)
    if name == common.DIVERGING:  # two arms from a light middle: each arm's lightness runs one way
        middle = len(colours) // 2
        assert (np.all(np.diff(lightness[: middle + 1]) > 0)
                and np.all(np.diff(lightness[middle:]) < 0))
        assert ends > 20 and min(delta_e(colours[0], colours[middle], vision),
                                 delta_e(colours[-1], colours[middle], vision)) > 30
    else:  # one direction of lightness from one end to the other
        steps = np.diff(lightness)
        assert np.all(steps > 0) or np.all(steps < 0), (name, vision, lightness.round(1))
        assert ends > 40
