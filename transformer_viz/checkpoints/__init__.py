"""Checkpoint directories: the file format (format), loading any model family through the registry
or a transformers Marian directory (load, marian), saving (save) and model cards (cards).

The public names are re-exported here; import them from ``transformer_viz.checkpoints``.
"""

from transformer_viz.checkpoints.cards import model_card  # noqa: F401
from transformer_viz.checkpoints.format import (  # noqa: F401
                                                CARD,
                                                CONFIG,
                                                DTYPES,
                                                METADATA,
                                                TOKENIZER_DIR,
                                                WEIGHTS,
                                                Checkpoint,
                                                CheckpointError,
                                                checkpoint_arch,
                                                read_generation_defaults,
)
from transformer_viz.checkpoints.load import (  # noqa: F401
                                              load_checkpoint,
                                              load_config,
                                              load_metadata,
)
from transformer_viz.checkpoints.save import (  # noqa: F401
                                              save_checkpoint,
                                              save_image_model,
                                              state_dict_for_saving,
                                              unique_state_dict,
)
