"""kxprof annotations for Python: ranges and marks that kxprof captures and
nests with the driver calls made inside them (ctypes over
libkxprof_annotate.so; see plugin/kxprof_annotate.h).

    import kxprof_annotate as kxprof

    with kxprof.range("step"):          # a thread range
        ...
    @kxprof.annotate                    # a range named after the function
    def forward(x): ...
    @kxprof.annotate("layer1")          # or named explicitly
    def layer(x): ...
    kxprof.mark("checkpoint")
    rid = kxprof.range_start("io")      # ends on any thread
    kxprof.range_end(rid)

    kxprof.torch_ranges()               # before `import torch`: every operator
    import torch                        # and record_function scope run under
    with torch.autograd.profiler.emit_itt():   # emit_itt() is a range,
        loss = model(x); loss.backward()       # category "PyTorch"

While no tracer is attached each call costs the ctypes call and one branch.
The library is found, in order: $KXPROF_ANNOTATE_LIB; next to this module;
the lib directory of its install prefix; the dynamic loader's search path
(LD_LIBRARY_PATH, ld.so.cache). Import fails, saying where it looked, when
none has it.
"""

import contextlib
import ctypes
import functools
import os
import sys

__all__ = ["range", "annotate", "mark", "range_push", "range_pop", "range_start",
           "range_end", "library_path", "torch_ranges"]

_NAME = "libkxprof_annotate.so"


def _candidates():
    env = os.environ.get("KXPROF_ANNOTATE_LIB")
    if env:
        return [env]  # asked for this one: no other
    here = os.path.dirname(os.path.abspath(__file__))
    # <prefix>/lib/pythonX.Y/dist-packages/ -> <prefix>/lib/
    prefix_lib = os.path.normpath(os.path.join(here, "..", ".."))
    return [os.path.join(here, _NAME), os.path.join(prefix_lib, _NAME), _NAME]


def _load():
    tried = []
    for path in _candidates():
        try:
            return ctypes.CDLL(path), path
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
    raise ImportError(
        "kxprof_annotate: cannot load %s; tried: %s. Build it (make) or install it "
        "(make install), or set KXPROF_ANNOTATE_LIB to its path"
        % (_NAME, "; ".join(tried)))


_lib, library_path = _load()
_lib.kxprof_range_push_cat.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
_lib.kxprof_range_push_cat.restype = None
_lib.kxprof_range_pop.argtypes = []
_lib.kxprof_range_pop.restype = None
_lib.kxprof_mark_cat.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
_lib.kxprof_mark_cat.restype = None
_lib.kxprof_range_start_cat.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
_lib.kxprof_range_start_cat.restype = ctypes.c_uint64
_lib.kxprof_range_end.argtypes = [ctypes.c_uint64]
_lib.kxprof_range_end.restype = None


def _b(s):
    if s is None:
        return None
    return s.encode("utf-8", "replace") if isinstance(s, str) else bytes(s)


def range_push(name, category=None):
    """Opens a range on the calling thread; range_pop() ends it."""
    _lib.kxprof_range_push_cat(_b(name), _b(category))


def range_pop():
    """Ends the calling thread's innermost open range."""
    _lib.kxprof_range_pop()


def mark(name, category=None):
    """A point in time on the calling thread."""
    _lib.kxprof_mark_cat(_b(name), _b(category))


def range_start(name, category=None):
    """Opens a range any thread may end; returns its id (an int, never 0)."""
    return _lib.kxprof_range_start_cat(_b(name), _b(category))


def range_end(range_id):
    """Ends the range range_start() returned."""
    _lib.kxprof_range_end(range_id)


@contextlib.contextmanager
def range(name, category=None):  # noqa: A001 (the API's name)
    """A thread range around a with block (ended on exceptions too)."""
    range_push(name, category)
    try:
        yield
    finally:
        range_pop()


def annotate(arg=None, category=None):
    """Decorator: each call of the function is a range, named after the
    function's qualified name, or `arg` when given as a string."""
    def wrap(fn, name):
        @functools.wraps(fn)
        def inner(*args, **kwargs):
            range_push(name, category)
            try:
                return fn(*args, **kwargs)
            finally:
                range_pop()
        return inner

    if callable(arg):
        return wrap(arg, arg.__qualname__)
    return lambda fn: wrap(fn, arg if arg is not None else fn.__qualname__)


_ITT_NAME = "libkxprof_itt.so"


def torch_ranges():
    """Makes PyTorch's ITT tasks kxprof ranges: under
    torch.autograd.profiler.emit_itt() every operator call and
    record_function scope becomes a range whose category is the ITT domain
    ("PyTorch"). Call it before `import torch`: torch creates its ITT domain
    when it loads, and only where a collector is named by then. The
    collector is $KXPROF_ITT_LIB, else libkxprof_itt.so next to the
    annotation library. Returns its path."""
    if "torch" in sys.modules:
        raise RuntimeError("kxprof_annotate.torch_ranges() must run before `import torch` "
                           "(torch creates its ITT domain when it is imported)")
    path = os.environ.get("KXPROF_ITT_LIB")
    if not path:
        here = os.path.dirname(library_path)
        path = os.path.join(here, _ITT_NAME) if here else _ITT_NAME
    if os.path.dirname(path) and not os.path.exists(path):
        raise ImportError("kxprof_annotate: no %s (build it: make; or set KXPROF_ITT_LIB)" % path)
    os.environ["INTEL_LIBITTNOTIFY64"] = path
    return path
