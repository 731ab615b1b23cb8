"""A make-believe device for the tests (no GPU here): :class:`DeviceOps`,
thinc ``Ops`` whose arrays are :class:`Device` arrays.  Like CuPy's, they
refuse to mix with plain numpy arrays in arithmetic (ufuncs) and in numpy's
functions (integer arrays aside: indices and split points, which CuPy takes
too), and what the ops' ``xp`` creates is on the device.  Stricter than
CuPy, which copies them over unasked, they refuse numpy index arrays and
assigned numpy arrays: what crosses, crosses by ``ops.asarray``.  Code that runs on
these ops makes no numpy array where CuPy would need its own; it runs on
numpy's arithmetic, so its numbers are the CPU's."""
import numpy
from thinc.api import Model, Ops


class Device(numpy.ndarray):
    """An array on a make-believe device: numpy's functions and ufuncs refuse
    to mix it with plain numpy arrays, as CuPy's refuse numpy arrays."""

    def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kwargs):
        _refuse_mixing(ufunc.__name__, inputs + (out or ()))
        inputs = tuple(_plain(x) for x in inputs)
        if out is not None:
            kwargs["out"] = tuple(_plain(x) for x in out)
        result = getattr(ufunc, method)(*inputs, **kwargs)
        if out is not None:
            return out[0] if len(out) == 1 else out
        return _wrap(result)

    def __getitem__(self, key):
        _refuse_host_index("indexing", key)
        return super().__getitem__(key)

    def __setitem__(self, key, value):
        _refuse_host_index("assignment", key)
        _refuse_mixing("assignment", [self, value])
        super().__setitem__(key, value)

    def __array_function__(self, func, types, args, kwargs):
        # integer arrays may be indices or split points (thinc's unflatten)
        _refuse_mixing(func.__name__, [x for x in _flat(args) + _flat(tuple(kwargs.values()))
                                       if not (isinstance(x, numpy.ndarray) and x.dtype.kind in "iu")])
        return _wrap(func(*_unwrap(args), **{k: _unwrap(v) for k, v in kwargs.items()}))


def _flat(xs):
    out = []
    for x in xs:
        if isinstance(x, (list, tuple)):
            out.extend(_flat(x))
        else:
            out.append(x)
    return tuple(out)


def _refuse_mixing(name, arrays):
    arrays = [x for x in arrays if isinstance(x, numpy.ndarray)]
    if any(isinstance(x, Device) for x in arrays) and any(
            not isinstance(x, Device) and x.ndim > 0 for x in arrays):
        raise TypeError(f"{name}: a numpy array among device arrays")


def _refuse_host_index(name, key):
    """Index arrays must be on the device too: code that indexes device
    arrays with the CPU's (which CuPy would copy over, unasked) crosses by
    ``ops.asarray`` instead."""
    keys = key if isinstance(key, tuple) else (key,)
    if any(isinstance(k, numpy.ndarray) and not isinstance(k, Device) and k.ndim > 0
           for k in keys):
        raise TypeError(f"{name}: a numpy index array into a device array")


def _plain(x):
    return x.view(numpy.ndarray) if isinstance(x, Device) else x


def _unwrap(x):
    if isinstance(x, (list, tuple)):
        return type(x)(_unwrap(v) for v in x)
    return _plain(x)


def _wrap(x):
    if isinstance(x, tuple):
        return tuple(_wrap(v) for v in x)
    if isinstance(x, numpy.ndarray) and not isinstance(x, Device):
        return x.view(Device)
    return x


class DeviceOps(Ops):
    """The device's ops: thinc's base ``Ops`` (no compiled kernels) on
    :class:`Device` arrays."""

    name = "device"

    def asarray(self, data, dtype=None):
        if isinstance(data, Device):
            return data if dtype is None or data.dtype == dtype else data.astype(dtype)
        return numpy.asarray(data, dtype=dtype).view(Device)

    def alloc(self, shape, *, dtype="float32", zeros=True):
        return numpy.zeros(shape, dtype=dtype).view(Device)

    def to_numpy(self, data, *, byte_order=None):
        return numpy.array(_plain(data))


class _DeviceModule:
    """numpy as the device's array module: what its functions create is on the device."""

    def __init__(self, module):
        self._module = module

    def __getattr__(self, name):
        value = getattr(self._module, name)
        if isinstance(value, type(numpy)):
            return _DeviceModule(value)
        if callable(value) and not isinstance(value, (type, numpy.ufunc)):
            return lambda *args, **kwargs: _wrap(value(*args, **kwargs))
        return value


DeviceOps.xp = _DeviceModule(numpy)


def to_device(ops: DeviceOps, *models: Model) -> None:
    """Put ``models`` (the layers themselves, not their sublayers) on ``ops``."""
    for model in models:
        model.ops = ops
        for name in model.param_names:
            if model.has_param(name):
                model.set_param(name, ops.asarray(model.get_param(name)))


def tok2vec_on_device(ops: DeviceOps, tok2vec: Model) -> None:
    """``tok2vec`` (left on the CPU: thinc's own layers are not what is
    tested) hands its vectors over on the device and takes their gradients
    back, as a tok2vec on a GPU would."""
    inner = tok2vec._func

    def forward(model, docs, is_train):
        vectors, backprop = inner(model, docs, is_train)
        return ([ops.asarray(v) for v in vectors],
                lambda d_vectors: backprop([ops.to_numpy(d) for d in d_vectors]))

    tok2vec._func = forward
