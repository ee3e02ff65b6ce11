"""The Lambda image the local stack runs, with the layer already in it.

``sam local`` rebuilds its image each time it creates a container for a function whose
layer is defined in the template (``CommonLayer``): a tarball of the 56 MB layer and a
``docker build`` per function, one at a time under its build lock -- minutes for the
stack's 30 functions. Here the image is built once per layer content: the base Lambda image,
SAM's runtime emulator at ``/var/rapid`` and the built layer at ``/opt``, tagged as the
"rapid" image SAM looks for. The local templates (``local_templates.py``) name no layer, so
``sam local`` finds that image and builds nothing.

The repository name carries a hash of the base image and the layer's files, so a changed
layer gets a new image, and stacks of other checkouts on the same Docker keep theirs.
"""

from __future__ import annotations

import hashlib
import io
import subprocess
import tarfile
from datetime import UTC, datetime
from pathlib import Path

import samcli
from samcli.local.docker.utils import get_rapid_name  # type: ignore[import-untyped]

REPOSITORY = "reservations/lambda-python3.11-layer"
RIE_DIR = Path(samcli.__file__).parent / "local" / "rapid"
OLD_AFTER_SECONDS = 3600  # another checkout's image, unused that long, may go


def docker(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["docker", *args], input=stdin, capture_output=True, check=False)


def image_id(reference: str) -> str:
    return docker("image", "inspect", "-f", "{{.Id}}", reference).stdout.decode().strip()


def layer_hash(base: str, layer: Path) -> str:
    """Of the base image's id and every file of the built layer (paths and contents)."""
    digest = hashlib.sha256(image_id(base).encode())
    for path in sorted(p for p in layer.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(layer)).encode() + b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def build_context(base: str, layer: Path, architecture: str) -> bytes:
    """A docker build context (tar): Dockerfile, the runtime emulator, the layer."""
    rie = get_rapid_name(architecture)
    dockerfile = (
        f"FROM {base}\n"
        f"COPY {rie} /var/rapid/aws-lambda-rie\n"
        "COPY layer /opt\n"
        f'LABEL reservations.layer-of="{base}"\n'
    ).encode()
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(dockerfile)
        tar.addfile(info, io.BytesIO(dockerfile))
        tar.add(RIE_DIR / rie, arcname=rie)
        tar.add(layer, arcname="layer")
    return buffer.getvalue()


def layered_image(base: str, layer: Path, architecture: str = "x86_64") -> str:
    """The ``--invoke-image`` to give ``sam local``: ``base`` with ``layer`` at /opt, built
    now unless an image of the same base and layer exists."""
    repository = f"{REPOSITORY}-{layer_hash(base, layer)}"
    rapid = f"{repository}:rapid-{architecture}"  # what SAM looks for (lambda_image.py)
    if not image_id(rapid):
        context = build_context(base, layer, architecture)
        built = docker("build", "-q", "-t", rapid, "-t", f"{repository}:local", "-", stdin=context)
        if built.returncode != 0:
            raise SystemExit(f"make run: building {rapid} failed:\n{built.stderr.decode()[-2000:]}")
        remove_old_images(keep=repository)
    return f"{repository}:local"


def remove_old_images(keep: str) -> None:
    """Layered images of an older layer, created over an hour ago; never by force, so an
    image a running container uses (another checkout's stack) stays."""
    listed = docker("images", "--format", "{{.Repository}}:{{.Tag}} {{.CreatedAt}}").stdout
    for line in listed.decode().splitlines():
        reference, _, created = line.partition(" ")
        if not reference.startswith(f"{REPOSITORY}-") or reference.startswith(f"{keep}:"):
            continue
        try:
            made = datetime.strptime(created[:25], "%Y-%m-%d %H:%M:%S %z")
        except ValueError:
            continue
        if (datetime.now(UTC) - made).total_seconds() > OLD_AFTER_SECONDS:
            docker("rmi", reference)
