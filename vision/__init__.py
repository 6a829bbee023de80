"""Camera sources, ball location and reading, and the synthetic ball renderer."""
