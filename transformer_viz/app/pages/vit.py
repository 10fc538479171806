"""Beyond text: a Vision Transformer — an 8 × 8 handwritten digit cut into patches, each patch a
token: the patch grid, the patch embeddings plus positions, the [CLS] token's attention to the
patches per layer and head, attention rollout across the layers, and the class probabilities. Pixels
can be blanked patch by patch."""

import streamlit as st

from transformer_viz.app import frame, loaders, sidebar, steps, url, widgets
from transformer_viz.plots.vit import (attention_overlay_figure, attention_rollout,
                                       class_probs_figure,
                                       patch_embeddings_figure, patch_grid_figure)

ctx = frame.page_context(__file__)
frame.page_header(
    ctx,
    "Attention needs tokens, not words. A **Vision Transformer** cuts an image into patches of p × "
    "p pixels, flattens each patch and maps it linearly to d_model numbers: each patch is now a "
    "token. A learned **[CLS]** token goes in front, a learned **position embedding** is added "
    "(patches have no order of their own), and the same encoder layers as the translation model's "
    "mix the tokens. The class is read from the [CLS] token at the top. Here: 8 × 8 digits from "
    "scikit-learn, a small ViT trained on this server's CPU, scored on held-out digits it never "
    "saw.",
    r"z_0 = [x_{cls};\, x_p^1 E; \dots; x_p^P E] + E_{pos},\quad z_\ell = "
    r"\mathrm{EncoderLayer}(z_{\ell-1}),\quad y = \mathrm{softmax}\big(W\, "
    r"\mathrm{LN}(z_N^{0})\big)",
    run=False)
name, checkpoint = loaders.page_model("vit", "the Vision Transformer checkpoint "
                                      "`checkpoints/vit-digits` (`python -m transformer_viz "
                                      "train-vit --out checkpoints/vit-digits`)")
split = loaders.digits_split()
cfg, n_test = checkpoint.config, len(split.test_labels)
P, p = cfg.n_patches, cfg.patch_size


def pickers() -> tuple[int, tuple[int, ...], int, int]:
    """The held-out digit (kept in the URL as digit=), the blanked patches, and the ViT's own layer
    and head."""
    state = st.session_state
    if "vit_digit" not in state:  # the session's first run: the link's digit
        state["vit_digit"] = sidebar.query_index("digit", n_test)
    digit_col, occlude_col, layer_col, head_col = st.columns([1, 2, 1, 1])
    index = digit_col.number_input(f"Held-out digit (0–{n_test - 1})", 0, n_test - 1,
                                   key="vit_digit")
    url.write(digit=str(index))
    occluded = occlude_col.multiselect("Blank patches (set their pixels to 0)",
                                       list(range(1, P + 1)),
                                       key="vit_occlude",
                                       help="Patch numbers as on the patch grid.")
    layer = layer_col.selectbox("ViT layer", list(range(cfg.N)), index=cfg.N - 1, key="vit_layer")
    head = head_col.selectbox("ViT head", list(range(cfg.h)), key="vit_head")
    return int(index), tuple(sorted(k - 1 for k in occluded)), layer, head


index, occluded, layer, head = pickers()
image, trace = loaders.get_vit_run(name, index, occluded)
probs = trace["probs"][0].numpy()  # (10,)
label = int(split.test_labels[index])
st.markdown(f"Held-out image {index}: a **{label}**. The model says **{int(probs.argmax())}** "
            f"(P = {probs.max():.2f}). Held-out accuracy of this model: "
            f"**{100 * checkpoint.metadata.get('held_out_accuracy', float('nan')):.1f} %** "
            f"of {checkpoint.metadata.get('held_out_images', n_test)} images.")
patch_tab, attention_tab, rollout_tab, class_tab = steps.tabs(ctx, [
    "1 · Patches become tokens", "2 · [CLS] attends to the patches", "3 · Rollout across layers",
    "4 · The class"], key="vit_step")
token_names = ["[CLS]"] + [f"patch {k}" for k in range(1, P + 1)]

if patch_tab.open:
    with patch_tab:
        left, right = st.columns(2)
        with left:
            fig = widgets.cached_figure(patch_grid_figure, image, p, occluded,
                                        title=f"{cfg.image_size}×{cfg.image_size} pixels, {P} "
                                        f"patches of {p}×{p}")
            widgets.chart(fig, {"row": [r for r in range(image.shape[0])
                                        for _ in range(image.shape[1])],
                                "column": list(range(image.shape[1])) * image.shape[0],
                                "pixel": image.ravel()},
                          "vit-image", caption=f"Each patch's {p * p} pixel values, read row by "
                                               "row, are one token's input (vit.patches).")
        with right:
            patches = trace["vit.patches"][0].numpy()  # (P, p·p)
            fig = widgets.cached_figure(patch_embeddings_figure, patches, token_names[1:],
                                        pixels=True,
                                        title=f"The patches, flattened: P × p·p = {P} × {p * p}")
            widgets.chart(fig, widgets.token_frame(patches, token_names[1:]), "vit-patches")
        embedded = trace["vit.patch_embed"][0].numpy()  # (P, d_model)
        fig = widgets.cached_figure(patch_embeddings_figure, embedded, token_names[1:],
                                    title=f"Patch embeddings x_p E: P × d_model = {P} × "
                                    f"{cfg.d_model}")
        widgets.chart(fig, widgets.token_frame(embedded, token_names[1:]), "vit-patch-embed",
                      caption="One linear map E for every patch: a blank patch gets E's bias only.")
        tokens = trace["vit.tokens"][0].numpy()  # (P + 1, d_model)
        fig = widgets.cached_figure(patch_embeddings_figure, tokens, token_names,
                                    title="The encoder's input z_0: [CLS] first, position "
                                    "embeddings added")
        widgets.chart(fig, widgets.token_frame(tokens, token_names), "vit-tokens",
                      caption="Blank patches now differ: the position embedding tells the layers "
                      "where each is.")

if attention_tab.open:
    with attention_tab:
        weights = trace[f"encoder.{layer}.self_attn.weights"][0].numpy()  # (h, P + 1, P + 1)
        columns = st.columns(2)
        for column, (which, row) in zip(columns, ((f"head {head}", weights[head, 0, 1:]),
                                                  ("mean of the heads", weights[:, 0,
                                                                                1:].mean(0)))):
            with column:
                fig = widgets.cached_figure(attention_overlay_figure, image, row, p,
                                            title=f"Layer {layer}, {which}: [CLS] → patches")
                widgets.chart(fig, {"patch": list(range(1, P + 1)), "weight": row},
                              f"vit-cls-{which[:4]}")
        st.caption(f"Row [CLS] of the attention weights (encoder.{layer}.self_attn.weights), "
                   f"without its weight on [CLS] itself ({weights[head, 0, 0]:.2f} for head "
                   f"{head}), one value per patch, drawn over the patch's pixels. Choose the layer "
                   "and head above.")

if rollout_tab.open:
    with rollout_tab:
        # N × (h, T, T)
        stacked = [trace[f"encoder.{i}.self_attn.weights"][0].numpy() for i in range(cfg.N)]
        rollout = attention_rollout(stacked)  # (P + 1, P + 1)
        fig = widgets.cached_figure(attention_overlay_figure, image, rollout[0, 1:], p,
                                    value_name="rollout",
                                    title=f"Attention rollout through all {cfg.N} layers: [CLS] → "
                                    "patches")
        widgets.chart(fig, {"patch": list(range(1, P + 1)), "rollout": rollout[0, 1:]},
                      "vit-rollout",
                      caption="Abnar & Zuidema (2020): per layer the heads' mean plus the identity "
                              "(the residual connection), rows renormalised, multiplied through "
                              "the layers. A rough guide to which pixels reached [CLS], not an "
                              "explanation of the decision.")

if class_tab.open:
    with class_tab:
        fig = widgets.cached_figure(class_probs_figure, probs, label, title="P(digit) from the "
                                                                            "[CLS] token")
        widgets.chart(fig, {"digit": list(range(10)), "probability": probs}, "vit-probs",
                      caption="Orange: the prediction; green outline: the true digit. Blank a few "
                              "patches and watch the probabilities move.")
