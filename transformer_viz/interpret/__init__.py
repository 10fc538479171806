"""Asking a model why: heads switched off, the logit lens, attributions — each an experiment on the
model's one forward pass through its hook points (core/hooks.py), never a copy of its arithmetic."""
