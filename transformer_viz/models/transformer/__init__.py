"""The encoder–decoder Transformer (Vaswani et al., 2017): config.py its JSON config and
presets (no torch), model.py the model top to bottom, names.py its documented trace names and
their TransformerLens names."""
