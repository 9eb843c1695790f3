"""Reads an .xplane.pb with the XSpace classes TensorFlow ships, loaded
from their file so that TensorFlow itself is not imported (seconds saved).

    space = xplane_read.load(path)
    xplane_read.line_events(plane, line) -> [(name, start_ps, end_ps)]
"""

import glob
import importlib.util
import os




def _module():
    spec = importlib.util.find_spec("tensorflow")
    path = os.path.join(os.path.dirname(spec.origin), "tsl/profiler/protobuf/xplane_pb2.py")
    mspec = importlib.util.spec_from_file_location("kx_xplane_pb2", path)
    mod = importlib.util.module_from_spec(mspec)
    mspec.loader.exec_module(mod)
    return mod


def load(path):
    """The XSpace of a file, or of the one .xplane.pb under a log directory."""
    if os.path.isdir(path):
        files = glob.glob(os.path.join(path, "plugins/profile/*/*.xplane.pb"))
        if len(files) != 1:
            raise RuntimeError("%d .xplane.pb files under %s" % (len(files), path))
        path = files[0]
    space = _module().XSpace()
    with open(path, "rb") as f:
        space.ParseFromString(f.read())
    return space


def line_events(plane, line):
    """[(name, start_ps, end_ps)] of a line, in the plane's time base."""
    out = []
    for e in line.events:
        start = line.timestamp_ns * 1000 + e.offset_ps
        out.append((plane.event_metadata[e.metadata_id].name, start, start + e.duration_ps))
    return out
