"""The recurrent encoder–decoders (GRU, without and with additive attention): config.py their
JSON config and presets (no torch), model.py the models, names.py their documented trace names."""
