"""The whole lecture on one sentence as one HTML file that needs no network and no server: a title
page with the sentence and its translation, then one <section> per step with its text (the run's
numbers), its formula (MathML, which browsers draw without a script) and its figure (plotly.js,
once, inline), and the speaker notes when asked for. A clicker's keys walk it (→, PageDown, Space:
next; ←, PageUp: previous; Home, End) and the URL's hash names the step shown (#0 is the title
page).

The Lecture page and the command line (``export-lecture``) both build it here: the figures are the
page's own (the same builders, the same Context from steps.step_context, the same browser figure as
the page sends), so the file shows what the page shows. A figure is drawn when its step is first
shown: a figure drawn while hidden has no width to lay itself out in, and the file opens at once.
"""

from __future__ import annotations

import functools
import html
import json
import re
from typing import TYPE_CHECKING

from transformer_viz.plots.payload import browser_figure
from transformer_viz.views.lecture.context import BEAM_K, Context
from transformer_viz.views.lecture.presets import preset_for, preset_verdict
from transformer_viz.views.lecture.steps import STEPS, Step, step_context

if TYPE_CHECKING:
    from transformer_viz.checkpoints import Checkpoint
    from transformer_viz.engine import SentenceRun

MAX_BYTES = 10_000_000  # the file must travel by e-mail and open on a lecture hall's laptop
# plotly.js's toolbar, as the app's charts have it (app/widgets.py), and a figure that follows the
# window's width.
CHART_CONFIG = {"displaylogo": False, "displayModeBar": "hover", "scrollZoom": False,
                "responsive": True}

# Nothing may be fetched: a policy that forbids every request makes a mistake fail loudly (a console
# error) instead of quietly needing a network. plotly.js needs inline scripts and styles, and data:
# images.
POLICY = ("default-src 'none'; script-src 'unsafe-inline'; "
          "style-src 'unsafe-inline'; img-src data: blob:; font-src data:")

STYLE = """
:root {--ink: #1f2328; --muted: #57606a; --line: #d0d7de; --accent: #0b5cad; --soft: #f6f8fa;}
html {font: 20px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--ink);}
body {margin: 0; background: #fff;}
main {max-width: 1500px; margin: 0 auto; padding: 0.5rem 1.5rem 4.5rem;}
h1 {font-size: 1.8rem; margin: 0.5rem 0;} h2 {font-size: 1.4rem; margin: 0.5rem 0 0.75rem;}
.step-no {color: var(--muted); font-weight: normal;}
.cols {display: flex; flex-wrap: wrap; gap: 1.5rem; align-items: flex-start;}
.words {flex: 2 1 20rem; min-width: 0;}
.picture {flex: 3 1 28rem; min-width: 0; overflow-x: auto;}
.formula {overflow-x: auto; font-size: 1.15em; padding: 0.25rem 0;}
.formula code {white-space: pre-wrap;}
mtd[columnalign="left"] {text-align: left;}
.alt {position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%);}
details.notes {background: var(--soft); border-left: 4px solid var(--accent); padding: 0.5rem 1rem;}
details.notes summary {cursor: pointer; font-weight: 600;}
.sentence {font-size: 1.3rem;} .muted {color: var(--muted);}
.note {background: var(--soft); padding: 0.5rem 1rem; border-radius: 4px;}
ol.contents {columns: 2 22rem;}
kbd {border: 1px solid var(--line); border-radius: 3px; padding: 0 0.3em;}
nav {position: fixed; left: 0; right: 0; bottom: 0; display: flex; gap: 1rem; align-items: center;
     padding: 0.4rem 1.5rem; background: #fff; border-top: 1px solid var(--line);}
nav button {font-size: 1.1rem; min-width: 3rem; padding: 0.2rem 0.8rem; cursor: pointer;}
nav progress {flex: 1; height: 0.6rem;} #where {min-width: 14rem;}
"""

# The clicker's keys, the buttons and the hash; a figure is drawn when its step is first shown.
SCRIPT = """
(() => {
  const sections = Array.from(document.querySelectorAll('main > section'));
  const last = sections.length - 1;
  const [prev, next] = [document.getElementById('prev'), document.getElementById('next')];
  const where = document.getElementById('where');
  const progress = document.getElementById('progress');
  const config = JSON.parse(document.getElementById('chart-config').textContent);
  let current = -1;
  const draw = (section) => {
    const box = section.querySelector('.figure');
    if (!box || box.dataset.drawn) return;
    box.dataset.drawn = '1';
    const spec = JSON.parse(section.querySelector('script.spec').textContent);
    const options = {...config, toImageButtonOptions: {filename: box.dataset.name, scale: 2}};
    Plotly.newPlot(box, spec.data, spec.layout, options);
  };
  const show = (n) => {
    n = Math.min(Math.max(n, 0), last);
    if (n !== current) {
      sections.forEach((s, i) => { s.hidden = i !== n; });
      current = n;
      draw(sections[n]);
      where.textContent = sections[n].dataset.label;
      progress.value = n;
      prev.disabled = n === 0;
      next.disabled = n === last;
      window.scrollTo(0, 0);
    }
    // replace, not push: the browser's Back button leaves the lecture instead of undoing steps
    if (location.hash !== '#' + n) location.replace('#' + n);
  };
  const fromHash = () => {
    const m = /^#([0-9]{1,4})$/.exec(location.hash);
    return m ? Number(m[1]) : 0;
  };
  const typing = (el) => el
    && (el.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(el.tagName));
  window.addEventListener('keydown', (event) => {
    if (event.altKey || event.ctrlKey || event.metaKey || typing(event.target)) return;
    const key = event.key;
    // Space on a focused button or the notes' summary is that control's own
    if (key === ' ' && event.target.closest && event.target.closest('button, summary, a')) return;
    let to = null;
    const space = key === ' ';
    if (['ArrowRight', 'PageDown'].includes(key) || (space && !event.shiftKey)) to = current + 1;
    else if (['ArrowLeft', 'PageUp'].includes(key) || (space && event.shiftKey)) to = current - 1;
    else if (key === 'Home') to = 0;
    else if (key === 'End') to = last;
    if (to === null) return;
    event.preventDefault();
    show(to);
  });
  window.addEventListener('hashchange', () => show(fromHash()));
  prev.addEventListener('click', () => show(current - 1));
  next.addEventListener('click', () => show(current + 1));
  show(fromHash());
})();
"""


def contexts(ckpt: Checkpoint, sentence: str, layer: int = 0,
             head: int = 0) -> tuple[SentenceRun, list[Context]]:
    """The sentence's traced run and what each step of STEPS is drawn from, as the Lecture page
    builds it (steps.step_context); the beam search is run once, for the step that draws it."""
    from transformer_viz.engine import run_sentence

    run = run_sentence(ckpt, sentence)
    beam = functools.cache(lambda: run_sentence(ckpt, sentence, beam_size=BEAM_K,
                                                trace=False))
    return run, [step_context(step, ckpt, run, layer, head, beam=beam) for step in STEPS]


# What the converter (latex2mathml) does not read as the lecture's formulas mean it, rewritten
# first. MathML Core (what Chromium draws) has no line breaks: a one-column table stacks
# steps.lines()'s lines. \arg is unknown to it, and \! (a negative thin space) it writes as a
# width nobody reads.
LATEX_REWRITES = ((r"\begin{gathered}", r"\begin{array}{c}"), (r"\end{gathered}", r"\end{array}"),
                  (r"\arg", r"\operatorname{arg}"), (r"\!", ""))
# ... and after: it keeps the backslash of a sized brace (\Big\{).
MATHML_REWRITES = ((">\\{<", ">{<"), (">\\}<", ">}<"))


def formula_html(latex: str) -> str:
    """The formula as MathML, which Chromium, Firefox and Safari draw with no script and no font to
    fetch; LaTeX the converter cannot read is shown as its source."""
    from latex2mathml.converter import convert

    for old, new in LATEX_REWRITES:
        latex = latex.replace(old, new)
    try:
        mathml = convert(latex, display="block")
    except Exception:  # the converter raises its own errors (and others) for LaTeX it cannot read
        return f'<pre class="latex"><code>{html.escape(latex)}</code></pre>'
    for old, new in MATHML_REWRITES:
        mathml = mathml.replace(old, new)
    # No namespace address: an HTML parser knows <math>, and the file names no URL at all.
    return re.sub(r'\s+xmlns="[^"]*"', "", mathml, count=1)


def figure_json(ctx: Context, step: Step) -> tuple[str, str, int | None]:
    """The step's figure as the app's page sends it to the browser (plots/payload.py): its JSON,
    safe inside a <script> element, its sentence for a screen reader, and its least width in px."""
    fig = browser_figure(step.figure(ctx).figure())
    text = json.dumps(fig.to_dict(), ensure_ascii=False, separators=(",", ":"), default=_plain)
    # "</script>" or "<!--" would end or upset the <script> element: "\\u003c" is "<" in a JSON
    # string (outside strings JSON has no "<").
    return text.replace("<", "\\u003c"), fig.alt, fig.min_width


def _plain(value):
    """What json.dumps cannot write itself: numpy scalars and arrays (a browser figure keeps its
    numeric arrays as plotly.js typed arrays, but a figure may hold a numpy number)."""
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"not JSON: {type(value).__name__}")


def paragraphs(text: str) -> str:
    parts = [part.strip() for part in re.split(r"\n\s*\n", text)]
    return "".join(f"<p>{html.escape(part)}</p>" for part in parts if part)


def notes_html(step: Step) -> str:
    parts = [f"<p><b>Say:</b> {html.escape(step.notes.say)}</p>",
             f"<p><b>Ask the class:</b> {html.escape(step.notes.ask)}</p>"]
    if step.notes.careful:
        parts.append(f"<p><b>Careful:</b> {html.escape(step.notes.careful)}</p>")
    return f'<details class="notes"><summary>Speaker notes</summary>{"".join(parts)}</details>'


def step_section(n: int, step: Step, ctx: Context, notes: bool) -> str:
    """Step ``n`` (from 1): its title, text, formula, figure and, when asked, its speaker notes."""
    spec, alt, min_width = figure_json(ctx, step)
    of = f"{n} / {len(STEPS)}"
    label = html.escape(f"{of} · {step.title}")
    width = f' style="min-width: {int(min_width)}px"' if min_width else ""
    words = (paragraphs(step.text(ctx)) + f'<div class="formula">{formula_html(step.formula)}</div>'
             + (notes_html(step) if notes else ""))
    picture = (f'<div class="figure" data-name="lecture-{step.id}"{width}></div>'
               f'<p class="alt" role="note">{html.escape(alt)}</p>')
    return (f'<section id="step-{n}" data-step="{n}" data-label="{label}" hidden>'
            f'<h2><span class="step-no">{of}</span> {html.escape(step.title)}</h2>'
            f'<div class="cols"><div class="words">{words}</div>'
            f'<div class="picture">{picture}</div></div>'
            f'<script type="application/json" class="spec">{spec}</script></section>')


KEYS_HELP = ("<p>Next: <kbd>→</kbd>, <kbd>PageDown</kbd> or <kbd>Space</kbd> (a clicker); "
             "previous: <kbd>←</kbd> or <kbd>PageUp</kbd>; <kbd>Home</kbd> and <kbd>End</kbd>: "
             "the first and the last step.</p>")


def title_section(ckpt: Checkpoint, run: SentenceRun, layer: int, head: int) -> str:
    """The title page: the sentence, the model's translation, the model, and how to move."""
    meta = ckpt.metadata or {}
    src, tgt = meta.get("src_lang", "source"), meta.get("tgt_lang", "target")
    notes = list(run.messages)  # what the page says of the input: what was cleaned or cut
    preset = preset_for(run.source_text)
    if preset is not None and preset.src_lang == src:
        notes.append(preset_verdict(preset, run, ckpt.tokenizer.convert_ids_to_tokens, meta))
    model = meta.get("name") or (ckpt.path.name if ckpt.path else "the model")
    contents = "".join(f'<li><a href="#{n}">{html.escape(s.title)}</a></li>'
                       for n, s in enumerate(STEPS, start=1))
    return ('<section id="step-0" data-step="0" data-label="Title" hidden>'
            "<h1>The Transformer, step by step</h1>"
            f'<p class="sentence">{html.escape(src)}: <b>{html.escape(run.source_text)}</b></p>'
            f'<p class="sentence">{html.escape(tgt)}: <b>{html.escape(run.translation)}</b></p>'
            + "".join(f'<p class="note">{html.escape(note)}</p>' for note in notes)
            + f'<p class="muted">Model: {html.escape(str(model))}. The figures of one head show '
            f"layer {layer}, head {head}. {len(STEPS)} steps.</p>"
            f'{KEYS_HELP}<ol class="contents">{contents}</ol></section>')


def lecture_html_of(ckpt: Checkpoint, run: SentenceRun, ctxs: list[Context], layer: int = 0,
                    head: int = 0, notes: bool = False) -> str:
    """The file for a run whose steps' contexts are made (:func:`contexts`, or the Lecture page's
    from its cached runs through steps.step_context), one per step of STEPS."""
    from plotly.offline import get_plotlyjs

    sections = [title_section(ckpt, run, layer, head)]
    sections += [step_section(n, step, ctx, notes)
                 for n, (step, ctx) in enumerate(zip(STEPS, ctxs, strict=True), start=1)]
    title = html.escape(f"Lecture: {run.source_text}")
    nav = ('<nav><button id="prev" title="Previous (← or PageUp)">◀</button>'
           '<span id="where"></span>'
           f'<progress id="progress" max="{len(STEPS)}" value="0"></progress>'
           '<button id="next" title="Next (→, PageDown or Space)">▶</button></nav>')
    return ('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{POLICY}">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            # an empty icon: otherwise the browser asks for /favicon.ico
            f'<link rel="icon" href="data:,"><title>{title}</title><style>{STYLE}</style>'
            f"<script>{get_plotlyjs()}</script></head><body>"
            "<noscript><p>The figures and the keys need JavaScript.</p></noscript>"
            f'<main>{"".join(sections)}</main>{nav}'
            f'<script type="application/json" id="chart-config">{json.dumps(CHART_CONFIG)}</script>'
            f"<script>{SCRIPT}</script></body></html>\n")


def lecture_html(ckpt: Checkpoint, sentence: str, layer: int = 0, head: int = 0,
                 notes: bool = False) -> str:
    """The lecture on ``sentence`` as one self-contained HTML document (see the module's
    docstring). Raises InputError for a sentence that cannot be run (empty) and for a layer or a
    head the model lacks."""
    from transformer_viz.text.tokenizer import InputError

    cfg = ckpt.config
    if not 0 <= layer < cfg.N or not 0 <= head < cfg.h:
        raise InputError(f"layer {layer}, head {head}: the model has layers 0 to {cfg.N - 1} and "
                         f"heads 0 to {cfg.h - 1}")
    run, ctxs = contexts(ckpt, sentence, layer, head)
    return lecture_html_of(ckpt, run, ctxs, layer, head, notes)
