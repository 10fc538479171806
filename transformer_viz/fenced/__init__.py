"""The fence: every use of a library's private internals, in one place, each with the gain that
keeps it.

A private attribute can change in any release inside the pinned ranges without a word in the
changelog. So each piece here names the version it was measured with, and
``tests/unit/test_fenced.py`` fails when the installed version is another (measure again, then
change the version here) or when the piece no longer does what it did.

The rule for keeping a piece: a user must be able to see its gain, at least 5 % of a page's server
or browser CPU for a new sentence (the server's median is 0.09 CPU-s a page, docs/deployment.md; 5 %
is 4.5 ms). ``bench/fenced_gain.py`` measures each piece against its public equivalent.

- :mod:`.plotly_private` (plotly): a template assigned without plotly's validation, 0.3-1.0 ms
  instead of 11-32 ms a figure (``bench/fenced_gain.py``); every figure of every page takes one.
  Kept.
- :mod:`.streamlit_private` (Streamlit): the id of the session a run belongs to, for the optional
  run log (app/runlog.py); no speed piece, and Streamlit has no public id of a session.
- :mod:`.torch_private` (torch): the decoder's submodules and LayerNorm parameters read without
  nn.Module.__getattr__'s failed lookup, 35.0 -> 33.7 ms a greedy sentence. About 1 % of a page's
  new sentence, so under the rule above, but 4 % of `translate` and `evaluate`, and it keeps
  greedy decoding within 10 % of the fast path the one forward pass replaced. Kept.

Gone, for a gain no user sees: stopping Streamlit's pollers of its config files (found by walking
``gc.get_objects()``) saved 0.0036 CPU-seconds per second of an idle process; typed arrays through
``_plotly_utils`` are what the public ``Figure.to_dict`` already sends; a browser figure's plotly
objects are now made with validation (only tests and notebooks ask for them; the app reads the
figure's dict).
"""
