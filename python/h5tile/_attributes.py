"""`Checkpoint.attrs`: a checkpoint's attributes, set by item assignment as in h5py
(`ck.attrs["step"] = 100`, `ck.attrs["/u"]["units"] = "K"`), and Python values as the C API
takes them: numbers as a one-dimensional array of one of its 14 element types, `str` as text.

Python checks each value when it is set, so a mistake raises at the line that made it, naming
the attribute; the C library copies the values at once.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Callable, Union

import numpy as np

from ._dtypes import code_of, native
from ._errors import (
    ArgumentKeyError, ArgumentOverflowError, ArgumentTypeError, DtypeError, InvalidArgumentError,
)

Stored = Union[bytes, np.ndarray]  # UTF-8 text, or a dense 1-D array of an h5tile element type
Setter = Callable[[str, str, Any], None]  # (object, name, value as given)

_INT64 = np.iinfo(np.int64)


def _numbers(value: Any, where: str) -> np.ndarray:
    if isinstance(value, bool):  # before int: bool is an int
        return np.array([value], np.bool_)
    if isinstance(value, int):
        if not _INT64.min <= value <= _INT64.max:
            raise ArgumentOverflowError(f"{where}: {value} does not fit in int64")
        return np.array([value], np.int64)
    if isinstance(value, float):
        return np.array([value], np.float64)
    if isinstance(value, complex):
        return np.array([value], np.complex128)
    if isinstance(value, (np.generic, np.ndarray, list, tuple)):
        try:
            return np.asarray(value)
        except (ValueError, TypeError) as e:  # ragged nesting
            raise ArgumentTypeError(f"{where}: {e}") from None
    raise ArgumentTypeError(
        f"{where}: a {type(value).__name__} is not stored; give a str, a number, a numpy "
        "scalar or array, or a list or tuple of numbers"
    )


def attribute_value(value: Any, where: str) -> Stored:
    """`value` as the checkpoint stores it; `where` names the attribute in errors."""
    if isinstance(value, str):  # numpy's str_ too
        if "\0" in value:
            raise InvalidArgumentError(f"{where}: text holds a NUL character")
        try:
            return value.encode()
        except UnicodeEncodeError as e:  # lone surrogates
            raise InvalidArgumentError(f"{where}: text is not UTF-8: {e}") from None
    if isinstance(value, (bytes, bytearray, memoryview)):
        raise ArgumentTypeError(f"{where}: bytes are not stored; give a str (decoded) for text")
    a = _numbers(value, where)
    if a.ndim > 1:
        raise ArgumentTypeError(f"{where}: an array of shape {a.shape}; attributes hold one dimension")
    if a.size == 0:
        raise InvalidArgumentError(f"{where}: holds no values; give at least one")
    try:
        code_of(a.dtype)
    except DtypeError as e:
        raise DtypeError(f"{where}: {e}") from None
    return np.ascontiguousarray(a.reshape(-1), dtype=native(a.dtype))


def attribute_name(name: Any, where: str) -> str:
    if not isinstance(name, str):
        raise ArgumentTypeError(f"attribute names are str, not {type(name).__name__} ({name!r}) {where}")
    if not name or "\0" in name:
        raise InvalidArgumentError(f"attribute name {name!r} {where} is empty or holds a NUL")
    return name


class Attributes(Mapping[str, Any]):
    """The attributes of one object of a checkpoint ("/": the file), as set so far.

    `attrs[name] = value` sets one (again: replaces it); `attrs["/group/or/dataset"]` is the
    attributes of that object (a missing group is created). Reading gives back the values set
    here, not the file's: the file has them once the checkpoint is committed (h5py's `attrs`
    reads them, numbers as one-dimensional arrays, text as `str`).
    """

    def __init__(self, set_value: Setter, owner: str = "/",
                 values: dict[tuple[str, str], Any] | None = None) -> None:
        self._set = set_value
        self._owner = owner
        self._values: dict[tuple[str, str], Any] = {} if values is None else values

    def __getitem__(self, key: str) -> Any:
        if isinstance(key, str) and key.startswith("/"):
            if self._owner != "/":
                raise ArgumentKeyError(
                    f"{key!r}: choose objects on the checkpoint's attrs, as ck.attrs['/u']")
            return self if key == "/" else Attributes(self._set, key, self._values)
        return self._values[(self._owner, key)]

    def __setitem__(self, key: str, value: Any) -> None:
        if isinstance(key, str) and key.startswith("/"):
            raise ArgumentTypeError(
                f"attrs[{key!r}] names an object: set its attributes as attrs[{key!r}][name] = value"
            )
        self._set(self._owner, key, value)
        self._values[(self._owner, key)] = value

    def __contains__(self, key: object) -> bool:
        return (self._owner, key) in self._values

    def __iter__(self) -> Iterator[str]:
        return iter([name for owner, name in self._values if owner == self._owner])

    def __len__(self) -> int:
        return sum(1 for owner, _ in self._values if owner == self._owner)

    def __repr__(self) -> str:
        return f"<checkpoint attributes of '{self._owner}': {dict(self)!r}>"
