"""Conversion of timm's gMLP and MLP-Mixer checkpoints.

timm's `MlpMixer` holds both families: gMLP (`SpatialGatingBlock`) and
MLP-Mixer (`MixerBlock`). `convert_gmlp` and `convert_mlp_mixer` give each
family's tensor names and `model_args`; `state_dict` loads and exports whole
models with them; `checkpoint` reads checkpoint files, `download` fetches
pinned public ones and `resampling` moves token-indexed weights to another
patch grid.
"""
