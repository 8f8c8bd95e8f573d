"""The parts of applications/train_image_classifier.py, one concern each:
`recipe` (flags, models and recipes; standard library only), `data`,
`model`, `training` and `reporting`."""
