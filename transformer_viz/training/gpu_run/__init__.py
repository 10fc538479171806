"""The paper's base model trained on a borrowed GPU (15 minutes of it), prepared and checked
here.

Three stages, one command each (``python -m transformer_viz.training.gpu_run STAGE``, ``cli``):

``prepare`` (here, on the CPU; ``data``): the joint BPE and the corpora encoded once, into a folder
    of a few MB that travels with the GPU command, so the GPU does no tokenizer work but decoding
    its dev translations.
``train`` (on the GPU, one process per direction; ``train``): the trainer's own loop
    (training.translation.run_epoch) for a wall-clock budget checked before every step, bf16
    autocast, the paper's schedule and label smoothing; greedy dev BLEU as it goes; at the end the
    weights are quantised (checkpoints.compact), put back into the model, scored on the dev sets,
    and written as int8 shards with a manifest of their SHA-256 hashes and of those scores: the
    scores of the weights exactly as sent.
``join`` (here; ``returned``, ``card``): checks the hashes, restores the weights, scores them again
    on this CPU and writes complete checkpoint directories.
``losses`` (here; ``data.split_losses``): the loss of checkpoints on each training split and dev
    set, to tell memorising from learning.

Only torch, tokenizers, safetensors, sacrebleu, tqdm and numpy are imported: the GPU machine has no
Streamlit, plotly or transformers.
"""

from transformer_viz.training.gpu_run.card import write_checkpoint
from transformer_viz.training.gpu_run.cli import main
from transformer_viz.training.gpu_run.data import (DEV_SETS, DIRECTIONS, LANGS, MANIFEST_SUFFIX,
                                                   TRAIN_SPLITS, Prepared, dev_scores, prepare)
from transformer_viz.training.gpu_run.returned import BLEU_TOLERANCE, join
from transformer_viz.training.gpu_run.probe import fitting_batch_tokens
from transformer_viz.training.gpu_run.train import GpuRunConfig, train_direction

__all__ = ["BLEU_TOLERANCE", "DEV_SETS", "DIRECTIONS", "LANGS", "MANIFEST_SUFFIX", "TRAIN_SPLITS",
           "GpuRunConfig", "Prepared", "dev_scores", "fitting_batch_tokens", "join", "main",
           "prepare", "train_direction", "write_checkpoint"]
