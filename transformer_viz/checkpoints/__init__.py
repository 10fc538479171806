"""Checkpoint directories: the file format, loading any model family through the registry, saving, cards.

The public names are re-exported here; import them from ``transformer_viz.checkpoints``.
"""

from transformer_viz.checkpoints.load import (CARD, CONFIG, DTYPES, METADATA, TOKENIZER_DIR, WEIGHTS,  # noqa: F401
                                              Checkpoint, CheckpointError, checkpoint_arch, load_checkpoint,
                                              load_config, load_metadata, model_card, read_generation_defaults,
                                              save_checkpoint, save_image_model, state_dict_for_saving)
