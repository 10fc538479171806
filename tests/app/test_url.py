"""app/url.py: the URL is written only where it changes, in one message, and step= goes with a page
that has no steps. Each write of st.query_params is a message to the browser; here they are
counted."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from transformer_viz.app import url


class CountedParams(dict):
    """st.query_params as far as url.py uses it, counting what would be messages to the browser."""

    def __init__(self, **values):
        super().__init__(values)
        self.messages = 0

    def update(self, other=(), **kwargs):
        self.messages += 1
        super().update(other, **kwargs)

    def __delitem__(self, key):
        self.messages += 1
        super().__delitem__(key)


@pytest.fixture()
def params(monkeypatch):
    fake = CountedParams(ckpt="de-en", s="Ein Hund .", layer="0", head="1", step="2")
    monkeypatch.setattr(url, "st", SimpleNamespace(query_params=fake))
    return fake


def test_what_the_url_already_says_is_not_sent_again(params):
    url.write(ckpt="de-en", s="Ein Hund .", layer="0", head="1")
    url.write_step(2)
    assert params.messages == 0
    url.write(ckpt="de-en", s="Zwei Katzen .", layer="0", head="3")  # two changes: one message
    assert params.messages == 1
    assert params == {"ckpt": "de-en", "s": "Zwei Katzen .", "layer": "0", "head": "3", "step": "2"}


def test_none_removes_a_parameter_only_when_it_is_there(params):
    url.write(off=None)
    assert params.messages == 0
    url.write(off="enc.0.1")
    url.write(off=None)
    assert params.messages == 2 and "off" not in params


def test_a_page_without_steps_leaves_no_step_and_one_with_steps_keeps_its_own(params):
    url.write_step(2)
    url.end_run(step_written=True)
    assert params["step"] == "2" and params.messages == 0
    # the next run opens a page without steps (or one that stopped before them)
    url.end_run(step_written=False)
    assert "step" not in params and params.messages == 1
    url.end_run(step_written=False)
    assert params.messages == 1  # nothing left to remove
