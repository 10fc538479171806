"""The lecture as data: an ordered list of steps, one per idea, from why translation needs more than
an RNN encoder–decoder to attention beyond text. Each step names its figure builder and its live
text (functions of the run, in figures.py and texts.py), its formula, the page it links to and its
speaker notes."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from transformer_viz.views.lecture.context import Context
from transformer_viz.views.lecture.figures import (
    FigureSpec, fig_add_norm, fig_cross, fig_decoder_only, fig_detr, fig_embeddings,
    fig_encoder_stack, fig_inference, fig_lookup, fig_masked_self, fig_multihead, fig_output,
    fig_positional, fig_qkv, fig_rnn, fig_scores, fig_tokens, fig_training, fig_vit)
from transformer_viz.views.lecture.texts import (
    text_add_norm, text_cross, text_decoder_only, text_detr, text_embeddings,
    text_encoder_stack, text_inference, text_lookup, text_masked_self, text_multihead,
    text_output, text_positional, text_qkv, text_rnn, text_scores, text_tokens, text_training,
    text_vit)
# (the step "What does a head do?")
from transformer_viz.views.lecture.figures import fig_heads  # noqa: I001
from transformer_viz.views.lecture.texts import text_heads
from transformer_viz.views.lecture.figures import fig_why  # noqa: I001 (the step "Why this word?")
from transformer_viz.views.lecture.texts import text_why


@dataclass(frozen=True)
class Notes:
    say: str  # what to say
    ask: str  # the question to ask the class
    careful: str = ""  # a misconception slides often carry, stated correctly


@dataclass(frozen=True)
class Step:
    id: str
    title: str
    figure: Callable[[Context], FigureSpec]  # its figure, drawn from the run
    text: Callable[[Context], str]  # two to four sentences with the run's own numbers
    formula: str  # LaTeX
    # the url_path of the app page that shows the idea in full (linked only when it exists)
    page: str | None
    notes: Notes
    # what makes the step slow on a large model (one line), None when nothing does: the app runs
    # such a step on a large model when the reader asks (app/on_request.py)
    slow: str | None = None


def lines(*parts: str) -> str:
    """A formula on several centred lines, each short enough for the text column beside the
    figure."""
    return r"\begin{gathered}" + r" \\ ".join(parts) + r"\end{gathered}"


STEPS: tuple[Step, ...] = (
    Step("rnn", "Why more than an RNN encoder–decoder", fig_rnn, text_rnn,
         lines(r"h_t = f(h_{t-1}, x_t),\quad c = h_S", r"s_t = g(s_{t-1}, y_{t-1}, c)"), "rnn",
         Notes("Start from the slide's RNN: the encoder squeezes the sentence into c, the decoder "
               "unrolls from it.",
               "What happens to the first words of a 40-word sentence by the time the encoder "
               "reaches the end?")),
    Step("lookup", "Attention as a soft database lookup", fig_lookup, text_lookup,
         lines(r"\text{sim}(q,k) \in \Big\{q^\top k,\ \frac{q^\top k}{\sqrt{d_k}},\ "
               r"q^\top G k\Big\}",
               r"\text{result} = \sum_j \text{softmax}_j(\text{sim}(q, k_j))\, v_j"), "attention",
         Notes("A lookup with soft matches: every key matches a little, the softmax "
               "decides how much.",
               "What would a hard lookup return if no key equals the query?",
               "The softmax runs over each query's keys: one row of the weight matrix sums to 1. "
               "In this app's figures queries are rows and keys are columns (some slides draw "
               "queries as columns).")),
    Step("tokens", "Tokens, IDs and padding", fig_tokens, text_tokens,
         lines(r"\text{text} \to (t_1, \dots, t_S)",
               r"\to (\text{id}_1, \dots, \text{id}_S) \in \{0, \dots, V-1\}^S"),
         "tokens",
         Notes("Subwords, not words: rare words are spelled from pieces; </s> ends every source.",
               "Why pad at all, if the padding is masked away anyway?")),
    Step("embeddings", "Word embeddings × √d_model", fig_embeddings, text_embeddings,
         r"x_i = E[\text{id}_i] \cdot \sqrt{d_{model}}", "tokens",
         Notes("A lookup table, learned; the same matrix (transposed) is the output layer here.",
               "Why multiply by √d_model rather than leave the rows as they are?")),
    Step("positional", "Sinusoidal positional encodings", fig_positional, text_positional,
         lines(r"PE_{(p, 2i)} = \sin\!\big(p / 10000^{2i/d_{model}}\big)",
               r"PE_{(p, 2i+1)} = \cos\!\big(p / 10000^{2i/d_{model}}\big)"), "positional",
         Notes("Each pair of dimensions is a clock at its own speed; together they give every "
               "position a unique code.",
               "Without them, would 'dog bites man' and 'man bites dog' look "
               "different to attention?",
               "The base is 10000 (the paper's; the text gives this model's); some "
               "slides write 1000.")),
    Step("qkv", "Self-attention: queries, keys and values", fig_qkv, text_qkv,
         lines(r"Q = XW_Q,\quad K = XW_K,\quad V = XW_V", r"Q, K, V \in \mathbb{R}^{S \times d_k}"),
         "attention",
         Notes("Three learned projections of the same X: self-attention.",
               "Why not compare the embeddings x_i · x_j directly?")),
    Step("scores", "Scores, scaling, the −∞ mask and the softmax", fig_scores, text_scores,
         lines(r"A = \text{softmax}\Big(\frac{QK^\top}{\sqrt{d_k}} + M\Big)",
               r"M_{ij} = \begin{cases}0 & j \le i\\ -\infty & j > i\end{cases}"), "attention",
         Notes("Scale, mask, softmax, in that order; e^−∞ = 0 is why the mask uses −∞ and not 0.",
               "What would a mask of 0 instead of −∞ do to the weights?",
               "The softmax runs along each query's row (over the keys); the figure draws "
               "queries as rows.")),
    Step("multihead", "Multi-head attention", fig_multihead, text_multihead,
         lines(r"\text{MultiHead}(Q,K,V)",
               r"= \text{Concat}(\text{head}_0, \dots, \text{head}_{h-1})\,W_O",
               r"d_k = d_{model}/h"), "encoder",
         Notes("h small attentions in parallel, each in d_k dimensions: the cost of one "
               "full-width head.",
               "Look at the heads: do some of them attend to the previous token, or to "
               "the sentence end?")),
    Step("add_norm", "Add & Norm, feed-forward, dropout", fig_add_norm, text_add_norm,
         lines(r"x' = \text{LayerNorm}(x + \text{Sublayer}(x))",
               r"\text{FFN}(x) = \max(0, xW_1 + b_1)W_2 + b_2"),
         "encoder",
         Notes("The residual keeps the input; LayerNorm keeps the scale; the FFN works on "
               "each position alone.",
               "Which sublayer mixes information between positions, and which never does?")),
    Step("encoder_stack", "The encoder stack", fig_encoder_stack, text_encoder_stack,
         lines(r"M = \text{Enc}_N(\cdots \text{Enc}_1(X + PE))",
               r"M \in \mathbb{R}^{S \times d_{model}}"), "encoder",
         Notes("N identical layers, different weights; the output M is the decoder's memory.",
               "Why can all source positions be computed at once here, unlike in the RNN?")),
    Step("masked_self", "The decoder's masked self-attention", fig_masked_self, text_masked_self,
         lines(r"A = \text{softmax}\Big(\frac{QK^\top}{\sqrt{d_k}} + M_{\text{causal}}\Big)",
               r"A \in \mathbb{R}^{T \times T}"), "decoder",
         Notes("In training the whole target is fed at once; the mask makes that equal to writing "
               "it word by word.",
               "What would the model learn if it could see the next word while predicting it?")),
    Step("cross", "Cross-attention", fig_cross, text_cross,
         lines(r"\text{softmax}\Big(\frac{Q_{dec} K_{enc}^\top}{\sqrt{d_k}}\Big) V_{enc}",
               r"\text{scores: } (B, h, T, S)"), "decoder",
         Notes("Here the decoder consults the source: the role the RNN's single c played, now "
               "per output step.",
               "Which source word should the decoder look at when it writes the next word?",
               "Q comes from the decoder, K and V from the encoder (some slides swap them); the "
               "score tensor is (B, h, T_target, S_source), not (B, T, T).")),
    Step("output", "The output layer and the softmax", fig_output, text_output,
         r"P(y_t \mid y_{<t}, x) = \text{softmax}(h_t E^\top)", "decoder",
         Notes("One probability per vocabulary entry; the model is a next-token classifier.",
               "Is the most probable token always the right one?")),
    Step("training", "Training: teacher forcing, label smoothing, the schedule", fig_training,
         text_training,
         lines(r"\mathcal{L} = -\sum_t \log P(y_t \mid y_{<t}, x)",
               r"lr = f \cdot d_{model}^{-0.5} \min(s^{-0.5},\ s \cdot w^{-1.5})",
               r"s = \text{step},\ w = \text{warm-up steps}",
               r"f = \text{the checkpoint's lr factor}"),
         "training",
         Notes("Teacher forcing: the correct previous words are fed in, never the "
               "model's own mistakes.",
               "What goes wrong at inference when the model only ever saw correct prefixes?")),
    Step("inference", "Inference: greedy and beam search", fig_inference, text_inference,
         r"\hat y_t = \arg\max_v P(v \mid \hat y_{<t}, x)", "decoding",
         Notes("One token at a time; each choice becomes input. Force another word and watch "
               "the rest change.",
               "If the class picks the second-best word here, will the translation get worse "
               "or just different?")),
    Step("heads", "What does a head do? Switch it off", fig_heads, text_heads,
         lines(r"\mathrm{Concat}(m_0 \mathrm{head}_0, \dots, m_{h-1} \mathrm{head}_{h-1}) W_O",
               r"m_i \in \{0, 1\}",
               r"\Delta_i = \log p(y \mid x) - \log p_{\setminus i}(y \mid x)"), "heads",
         Notes("Attention shows where a head looks; switching it off shows whether the translation "
               "needed it. Open the page, switch off the tallest bar's head and compare the two "
               "translations; then step 3: the word attention points at is often not the word the "
               "output depends on.",
               "If a head's attention map looks like a perfect word alignment, will switching it "
               "off hurt the translation?",
               "Attention weights are not an explanation: a head can attend strongly to a word "
               "whose removal changes nothing (other heads carry the same information), and heads "
               "on </s> or '.' often act as a no-op."),
         "It switches each of the 3·N·h heads off in turn, one batched pass."),
    Step("why", "Why this word? Activation patching", fig_why, text_why,
         lines(r"LD = \mathrm{logit}(X) - \mathrm{logit}(Y)\ \text{at position } t",
               r"\text{restored share} = \frac{LD_{\text{patched}} - LD_{\text{corrupted}}}"
               r"{LD_{\text{clean}} - LD_{\text{corrupted}}}"), "why",
         Notes("Two sentences one word apart, both fed the clean translation: copy one clean "
               "cell into the corrupted run and see how much of the clean word returns. Read the "
               "summary aloud, then open the page: its head grid names the cross-attention head "
               "that reads the deciding word; its last section, which words leaned on the source.",
               "The encoder cell of the changed word restores nearly everything at layer 0. Why "
               "does the same word's cell restore less, or move elsewhere, in later layers?",
               "A restored share is causal for this pair and this position only: a head that "
               "restores little here may matter for other sentences, and shares can exceed 1 or "
               "go below 0 when a patch overshoots or pushes the other way."),
         "It patches every layer, position and head, a batched pass for each."),
    Step("decoder_only", "Decoder-only models complete the sentence", fig_decoder_only,
         text_decoder_only,
         lines(r"P_T(x_t \mid x_{<t}) = \text{softmax}(h_{t-1} E^\top / T)",
               r"x_t \sim P_T,\ \text{then append } x_t"), "complete",
         Notes("What changes: no encoder, one mask, a prompt read at once, then tokens sampled one "
               "by one. Open the page and complete \"Where there is a will, there\" at T = 0, then "
               "at T = 1.5.",
               "Could a decoder-only model translate? What would its prompt look like?",
               "GPT-3's embedding dimension (d_model) is 12,288 and its vocabulary 50,257 tokens; "
               "its embedding matrix is 50,257 × 12,288 ≈ 0.6 billion of its 175 billion "
               "parameters: most are in the 96 layers.")),
    Step("vit", "Attention beyond text: the Vision Transformer", fig_vit, text_vit,
         lines(r"N = \frac{HW}{P^2} = \frac{224 \cdot 224}{16^2} = 196",
               r"z_0 = [x_{cls};\, x_p^1 E; \dots; x_p^N E] + E_{pos}"), "vit",
         Notes("Same encoder, other tokens: an image is a sequence of patches.",
               "What plays the role of word order for patches?")),
    Step("detr", "Attention beyond text: DETR", fig_detr, text_detr,
         lines(r"\hat y_i = (\hat c_i, \hat b_i),\quad i = 1, \dots, N",
               r"\hat\sigma = \arg\min_\sigma \sum_i \mathcal{L}_{match}(y_i, \hat y_{\sigma(i)})"),
         "detr",
         Notes("The decoder's queries are learned slots, not words; each finds one "
               "object or says ∅.",
               "Why does DETR need no non-maximum suppression?")),
)


def step_context(step: Step, ckpt, run, layer: int = 0, head: int = 0, position: int = 1,
                 beam: Callable[[], object] | None = None) -> Context:
    """What ``step`` is drawn from, for a checkpoint's run of a sentence: the Lecture page and the
    lecture's HTML file (export.py) both build it here, so that the file shows what the page shows.
    ``beam`` gives the sentence's beam search (BEAM_K wide, no trace); it is called only for the
    step that draws one."""
    beam_run = beam() if beam is not None and step.id == "inference" else None
    return Context(run, layer, head, ckpt.tokenizer.convert_ids_to_tokens, ckpt.metadata, position,
                   ckpt.model, beam_run, ckpt)


def step_number(raw, n: int = len(STEPS)) -> int:
    """The 1-based step a URL's ``step`` names; 1 when it is missing, malformed or out of range."""
    text = str(raw).strip() if raw is not None else ""
    return int(text) if re.fullmatch(r"[0-9]{1,4}", text) and 1 <= int(text) <= n else 1
