"""The exercises on the layers: where a head looks, the causal mask, a head switched off, Add & Norm
and the feed-forward network."""

from __future__ import annotations

from transformer_viz.interpret.explain import heads_run, translation_with_heads_off
from transformer_viz.plots.common import token_labels
from transformer_viz.plots.heads import head_drop_figure
from transformer_viz.plots.layers import ffn_hidden_figure, layernorm_stats_figure, position_stats
from transformer_viz.views.attention import attention
from transformer_viz.views.practice.base import (
    Context, Exercise, Posed, answer_figure, attention_row, label, largest, shown, traced)
from transformer_viz.views.practice.checks import head_answer, number_answer, token_answer
from transformer_viz.views.spec import FigureSpec
from transformer_viz.views.tables import token_frame


def pose_self_attention(ctx: Context) -> Posed:
    run, L, H = ctx.run, ctx.layer, ctx.head
    i, row, best = attention_row(ctx, f"encoder.{L}.self_attn.weights", len(run.src_ids))  # (S,)
    j = best[0]
    tokens = run.src_tokens
    return Posed(
        f"In encoder layer {L}, head {H} (the sidebar's), which token does {shown(tokens[i])} "
        f"(position {i}) give the largest attention weight? Type the token.",
        token_answer([tokens[k] for k in best], shown(tokens[j])),
        (f"Row = query, column = key: read the row of {shown(tokens[i])} in this head's weights "
         f"on the Attention page (encoder self-attention, layer {L}, head {H}).",
         f"The row's weights sum to 1; here they run from {row.min():.2f} to {row.max():.2f}. A "
         "token may attend to itself."),
        f"{shown(tokens[i])} gives {row[j]:.3f} of its attention to {shown(tokens[j])}, position "
        f"{j}.",
        answer_figure(attention(run, L, H, "encoder", "weights"),
                      f"Answer: {label(tokens[j])} ({row[j]:.2f}, framed)", rows=(i, i),
                      cols=(j, j)))


def pose_causal(ctx: Context) -> Posed:
    run, L, H = ctx.run, ctx.layer, ctx.head
    T = len(run.tgt_ids)
    a = max(0, min(2, T - 2))
    b = max(a + 1, min(a + 3, T - 1))
    weights = traced(ctx, f"decoder.{L}.self_attn.weights")[H]  # (T, T)
    value = float(weights[a, b]) if b < T else 0.0  # a one-token translation has no later position
    name = lambda k: f" ({shown(run.tgt_tokens[k])})" if k < T else ""  # noqa: E731
    cell = {"rows": (a, a), "cols": (b, b)} if b < T else {}
    answer = number_answer(value)
    return Posed(
        f"The decoder's self-attention is masked. In decoder layer {L}, head {H}, what weight does "
        f"position {a}{name(a)} give position {b}{name(b)}? (2 decimals)",
        answer,
        (f"While it writes the token after position {a}, the decoder must not read the tokens it "
         "has not written yet.",
         "The causal mask sets the scores of every later position to −∞ before the softmax, and "
         "e^(−∞) = 0."),
        f"Position {b} comes after position {a}: masked, weight exactly {value:g}.",
        answer_figure(attention(run, L, H, "decoder", "weights"),
                      f"Answer: {answer.shown} (framed: a masked cell)", **cell))


def pose_head_off(ctx: Context) -> Posed:
    ckpt, run = ctx.checkpoint, ctx.run
    numbers = heads_run(ckpt.model, run.src_ids, run.tgt_ids)  # one batched pass through the hooks
    names = [str(h) for h in numbers.heads]
    best = largest(numbers.drops)
    top = best[0]
    off_text = translation_with_heads_off(ckpt, run.src_ids, [numbers.heads[top]])[1]
    same = off_text == run.translation
    changed = "the same translation" if same else f"“{off_text or '(empty)'}”"
    spec = FigureSpec(head_drop_figure, (names, numbers.drops, (names[top],)),
                      {"title": "How much log p(translation) falls when one head alone is off"},
                      {"head": names, "drop (nats)": numbers.drops})
    return Posed(
        "Switch the heads off one at a time. Which single head, switched off, lowers the "
        "log-probability of your translation the most? Type it as kind.layer.head, e.g. "
        "cross.1.2 (kinds: enc, dec, cross).",
        head_answer([names[k] for k in best], names[top]),
        ("A head is switched off by setting its output to 0 before W_O; the model then reads the "
         "same translation again (teacher forcing) and we see how much less probable it has "
         "become.",
         f"There are 3 · N · h = {len(names)} heads: enc (encoder self-attention), dec (decoder "
         "self-attention) and cross (cross-attention). “What does a head do?” draws one bar per "
         "head."),
        f"{names[top]} ({numbers.heads[top].label}): log p falls by {numbers.drops[top]:.3f} "
        f"nats. With it off, greedy decoding writes {changed}, instead of “{run.translation}”.",
        answer_figure(spec, f"Answer: {names[top]} (orange)"))


def pose_add_norm(ctx: Context) -> Posed:
    run, L = ctx.run, ctx.layer
    p = f"encoder.{L}.norm1"
    mean, var = traced(ctx, f"{p}.mean"), traced(ctx, f"{p}.var")  # (S,) each
    after_mean, after_var = position_stats(traced(ctx, f"{p}.out"))
    value = float(mean[0])
    spec = FigureSpec(layernorm_stats_figure,
                      (mean, var, after_mean, after_var, token_labels(run.src_tokens)),
                      {"title": f"Encoder layer {L}, first Add & Norm"},
                      {"mean before": mean, "variance before": var, "mean after": after_mean,
                       "variance after": after_var})
    answer = number_answer(value)
    return Posed(
        f"In encoder layer {L}, the first Add & Norm adds the self-attention's output to its "
        f"input and normalises the sum. At position 0 ({shown(run.src_tokens[0])}), what is the "
        f"mean of that sum over its d_model = {ctx.config.d_model} numbers, the mean LayerNorm "
        "subtracts? (2 decimals)",
        answer,
        ("Add: x + Sublayer(x), the residual. Norm: subtract the mean μ of its d_model numbers, "
         "divide by √(σ² + ε), then scale by γ and shift by β.",
         "The Encoder page draws each position's mean and variance before and after LayerNorm: "
         "the mean before is the answer."),
        f"μ = {value:.4f} at position 0 (variance σ² = {float(var[0]):.4f}).",
        answer_figure(spec, f"Answer: μ = {answer.shown} (framed)", cols=(0, 0)))


def pose_ffn(ctx: Context) -> Posed:
    run, cfg, L = ctx.run, ctx.config, ctx.layer
    ffn = ctx.checkpoint.model.encoder_layers[L].ffn
    count = sum(p.numel() for p in ffn.parameters())
    hidden = traced(ctx, f"encoder.{L}.ffn.hidden")  # (S, d_ff)
    spec = FigureSpec(ffn_hidden_figure, (hidden, token_labels(run.src_tokens)),
                      {"title": f"Encoder layer {L}: the feed-forward's hidden units"},
                      token_frame(hidden, run.src_tokens))
    return Posed(
        "The position-wise feed-forward network of one layer is two linear maps, d_model → d_ff "
        "→ d_model, each with a bias. How many parameters does one such sublayer have? (exactly)",
        number_answer(count, exact=True),
        ("W_1 is d_model × d_ff and b_1 has d_ff numbers; W_2 is d_ff × d_model and b_2 has "
         "d_model.",
         f"Here d_model = {cfg.d_model} and d_ff = {cfg.d_ff}."),
        f"2 · {cfg.d_model} · {cfg.d_ff} + {cfg.d_ff} + {cfg.d_model} = {count:,}, counted on the "
        f"model's own layer.",
        answer_figure(spec, f"Answer: {count:,} parameters, for {cfg.d_ff} hidden units"))


LAYER_EXERCISES = (
    Exercise("self_attention", "Where does a head look?", "attention",
             ("query, key, value", "attention weight", "softmax", "head"), pose_self_attention),
    Exercise("causal", "The causal mask", "masking", ("causal mask", "attention weight", "softmax"),
             pose_causal),
    Exercise("head_off", "A head switched off", "heads", ("head", "ablation", "log-probability"),
             pose_head_off, "It switches each of the 3·N·h heads off in turn, one batched pass."),
    Exercise("add_norm", "Add & Norm", "encoder", ("residual", "LayerNorm", "d_model"),
             pose_add_norm),
    Exercise("ffn", "The feed-forward's parameters", "encoder",
             ("feed-forward network", "d_ff", "parameter"), pose_ffn),
)
