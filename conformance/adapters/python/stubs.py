"""Stubs generated from the contract's .proto files with grpc_tools.protoc, once per proto content.

Nothing is committed: the stubs are built into a cache directory keyed by a hash of the .proto files,
so any change to the contract regenerates them, and put on sys.path.
"""

import hashlib
import os
import pathlib
import sys
import tempfile

# The runner says where its .proto files are (an installed kit ships them); a checkout has them at its root.
PROTO_ROOT = pathlib.Path(
    os.environ.get("TASKQ_CONFORMANCE_PROTO_DIR") or pathlib.Path(__file__).resolve().parents[3] / "proto"
)
PROTOS = [
    "taskq/v1/job.proto",
    "taskq/v1/worker.proto",
    "taskq/v1/producer.proto",
    "taskq/conformance/v1/adapter.proto",
]


def _digest() -> str:
    h = hashlib.sha256()
    for name in PROTOS:
        h.update(name.encode())
        h.update((PROTO_ROOT / name).read_bytes())
    return h.hexdigest()[:16]


def load_stubs() -> None:
    """Generate the stubs if this proto content has none yet, then make them importable."""
    out = pathlib.Path(tempfile.gettempdir()) / f"taskq-conformance-py-{_digest()}"
    if not out.exists():
        from grpc_tools import protoc

        # Build beside the final directory and rename: concurrent cases may race to generate.
        staging = pathlib.Path(tempfile.mkdtemp(prefix=out.name + ".", dir=out.parent))
        # The well-known types (google/protobuf/duration.proto, ...) ship inside grpc_tools.
        well_known = pathlib.Path(protoc.__file__).parent / "_proto"
        args = ["protoc", f"-I{PROTO_ROOT}", f"-I{well_known}", f"--python_out={staging}", f"--grpc_python_out={staging}"]
        if protoc.main(args + PROTOS) != 0:
            raise RuntimeError("grpc_tools.protoc failed to generate the stubs")
        try:
            os.rename(staging, out)
        except OSError:
            pass  # another process got there first; its stubs are the same
    sys.path.insert(0, str(out))
