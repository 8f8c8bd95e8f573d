"""The installed Keras' release, for the paths that depend on it."""

import keras


def keras_version():
    """The installed Keras' (major, minor) release."""
    major, minor = keras.version().split(".")[:2]
    return int(major), int(minor)
