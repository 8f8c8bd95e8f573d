"""Resampling of token-indexed weights to another patch grid.

The spatial weights of gMLP (and the token MLP of MLP-Mixer) are indexed by
token, and tokens are the row-major flatten of the patch grid. A model used
at another resolution than its weights were trained at has another grid, so
these weights are interpolated as functions on the 2-D grid (bilinear,
half-pixel centres, edges clamped) rather than cropped or left at their
initial values. The arrays are host-side NumPy arrays: resampling happens
once, while weights are loaded, before they reach a backend.
"""

import numpy as np


def _interpolation_matrix(source_size, target_size):
    """(target_size, source_size) matrix of 1-D linear interpolation."""
    matrix = np.zeros((target_size, source_size), dtype=np.float64)
    scale = source_size / target_size
    for i in range(target_size):
        # Half-pixel centres, as image resizing does, so both grids cover
        # the same image area.
        x = min(max((i + 0.5) * scale - 0.5, 0.0), source_size - 1)
        low = int(np.floor(x))
        high = min(low + 1, source_size - 1)
        fraction = x - low
        matrix[i, low] += 1.0 - fraction
        matrix[i, high] += fraction
    return matrix


def resample_token_axis(array, axis, source_grid, target_grid, summed=False):
    """Resamples one token axis of `array` from one patch grid to another.

    Args:
        array: NumPy array with a token axis of length `rows * columns` of
            `source_grid`.
        axis: int, the token axis.
        source_grid: `(rows, columns)` of the grid the weights were trained on.
        target_grid: `(rows, columns)` of the new grid.
        summed: bool, whether the model sums over this axis (the input index
            of a token-mixing matrix). Such weights are scaled by
            `source_tokens / target_tokens`, so a sum over more (or fewer)
            tokens of the same image keeps its magnitude.

    Returns:
        A float32 array whose token axis has `rows * columns` of
        `target_grid` entries.

    Examples:

    ```python
    kernel = np.random.normal(size=(196, 196))  # (output token, input token)
    kernel = resample_token_axis(kernel, 0, (14, 14), (16, 16))
    kernel = resample_token_axis(kernel, 1, (14, 14), (16, 16), summed=True)
    kernel.shape  # (256, 256)
    ```
    """
    source_grid = tuple(int(s) for s in source_grid)
    target_grid = tuple(int(s) for s in target_grid)
    array = np.asarray(array, dtype=np.float64)
    axis = axis % array.ndim
    if array.shape[axis] != source_grid[0] * source_grid[1]:
        raise ValueError(
            f"Axis {axis} of the array must have one entry per token of the "
            f"{source_grid[0]}x{source_grid[1]} grid. Received: "
            f"array.shape={array.shape}, source_grid={source_grid}"
        )
    rows = _interpolation_matrix(source_grid[0], target_grid[0])
    columns = _interpolation_matrix(source_grid[1], target_grid[1])
    moved = np.moveaxis(array, axis, 0)
    rest = moved.shape[1:]
    grid = moved.reshape(source_grid + (-1,))
    grid = np.einsum("ir,jc,rcx->ijx", rows, columns, grid)
    if summed:
        grid *= (source_grid[0] * source_grid[1]) / (target_grid[0] * target_grid[1])
    resampled = grid.reshape((target_grid[0] * target_grid[1],) + rest)
    return np.moveaxis(resampled, 0, axis).astype(np.float32)


def infer_grid(num_tokens, like_grid):
    """The patch grid of `num_tokens` tokens: square, else shaped like `like_grid`.

    Checkpoints store token counts, not grids. A square grid is assumed when
    `num_tokens` is a perfect square; otherwise the grid with the aspect
    ratio of `like_grid` (the model's own grid) is taken.

    Args:
        num_tokens: int, the number of tokens of the checkpoint.
        like_grid: `(rows, columns)` whose aspect ratio to try.

    Returns:
        `(rows, columns)`.

    Examples:

    ```python
    infer_grid(196, (16, 16))  # (14, 14)
    infer_grid(24, (8, 12))    # (4, 6)
    ```
    """
    side = int(round(num_tokens**0.5))
    if side * side == num_tokens:
        return (side, side)
    for rows in range(1, num_tokens + 1):
        columns, remainder = divmod(num_tokens, rows)
        if not remainder and rows * like_grid[1] == columns * like_grid[0]:
            return (rows, columns)
    raise ValueError(
        f"Cannot tell the patch grid of a checkpoint with {num_tokens} "
        "tokens: it is neither square nor of the model's aspect ratio "
        f"{like_grid[0]}:{like_grid[1]}. Pass `checkpoint_grid=(rows, "
        f"columns)`. Received: num_tokens={num_tokens}"
    )
