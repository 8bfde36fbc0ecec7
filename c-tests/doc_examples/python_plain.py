# docs/python.md's fragments that assume only the package imported.
import h5tile  # noqa: F401

# EXAMPLE
