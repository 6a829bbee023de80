"""vision.stats gives numpy's median and percentile, value and type."""
import numpy as np
import pytest

from vision.stats import median, percentile


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.uint8])
def test_same_as_numpy(dtype):
    rng = np.random.default_rng(7)
    for n in [1, 2, 3, 4, 5, 10, 71, 72, 500, 2001]:
        for _ in range(10):
            a = (rng.random(n) * 250).astype(dtype)
            for q in (0, 10, 50, 70, 75, 95, 100):
                want, got = np.percentile(a, q), percentile(a, q)
                assert got == want and np.asarray(got).dtype == np.asarray(want).dtype, (n, q)
            want, got = np.median(a), median(a)
            assert got == want and np.asarray(got).dtype == np.asarray(want).dtype, n


def test_empty_sample_is_an_error():
    with pytest.raises(ValueError):
        median(np.array([]))
