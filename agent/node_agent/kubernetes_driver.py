"""Stopping pods through the Kubernetes API (the official ``kubernetes`` client).

    DELETE /api/v1/namespaces/{ns}/pods/{workloadId}  {"gracePeriodSeconds": grace}
      200/202 -> wait until the pod is gone (404, or a new pod with another uid)  -> terminated
              -> still there after grace + settle seconds                         -> failed
      404     -> gone
      409, 5xx, any other status, no answer                                       -> failed

With a reclaim's notice (the message's ``terminateAt``) the pod is deleted as soon as the
message comes, with the seconds left until ``terminateAt`` as its grace period: its SIGTERM
is its notice, and the kubelet kills it at the deadline. Without a notice the grace is 0; a
message without ``terminateAt`` (an older sender) gets the agent's ``--grace-seconds``.

"terminated" frees the pod's units, so it waits for the pod to be gone, not only for the API
to accept the delete: with a grace period the kubelet may run it that long. A grace of 0 asks
the API to remove the pod at once (as ``kubectl delete --grace-period=0 --force``); the kubelet
then kills its containers as soon as it sees that.

Credentials come from a kubeconfig file, or, without one, from the pod's service account
(``KUBERNETES_SERVICE_HOST``/``_PORT`` and the token and CA files Kubernetes mounts).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from kubernetes.config.incluster_config import (
    SERVICE_CERT_FILENAME,
    SERVICE_TOKEN_FILENAME,
    InClusterConfigLoader,
)
from urllib3.exceptions import HTTPError

from node_agent.drivers import Clock, Result, poll_until
from termination_messages import SpotTermination, WorkloadKind

SERVICE_ACCOUNT_FILES = (Path(SERVICE_TOKEN_FILENAME), Path(SERVICE_CERT_FILENAME))


def api_client(
    kubeconfig: Path | None = None,
    context: str | None = None,
    service_account: tuple[Path, Path] = SERVICE_ACCOUNT_FILES,
    environ: Mapping[str, str] = os.environ,
) -> Any:
    """An API client from the kubeconfig file, or else from the in-cluster service account
    (``service_account`` is its token and CA certificate files)."""
    configuration = client.Configuration()
    if kubeconfig is not None:
        config.load_kube_config(
            config_file=str(kubeconfig),
            context=context,
            client_configuration=configuration,
            persist_config=False,
        )
    else:
        token, ca_cert = service_account
        InClusterConfigLoader(
            token_filename=str(token), cert_filename=str(ca_cert), environ=environ
        ).load_and_set(configuration)
    return client.ApiClient(configuration)


class KubernetesDriver:
    """Deletes the pod named by the workload id, in one namespace, and waits until it is gone."""

    name = "kubernetes"
    kinds = frozenset({WorkloadKind.POD})

    def __init__(
        self,
        api: Any,
        namespace: str = "default",
        grace_seconds: int = 0,
        settle_seconds: float = 30.0,
        request_timeout: float = 10.0,
        clock: Clock | None = None,
        poll_every: float = 1.0,
    ) -> None:
        self._pods = client.CoreV1Api(api)
        self._namespace = namespace
        self._grace = grace_seconds
        self._settle = settle_seconds
        self._timeout = request_timeout
        self._clock = clock or Clock()
        self._poll_every = poll_every

    def lead_seconds(self, termination: SpotTermination) -> float:
        """The pod is deleted at once: its grace period is the whole notice."""
        return termination.notice_seconds

    def grace_seconds(self, termination: SpotTermination) -> int:
        """The seconds left until the deadline (rounded up: never sooner), or the agent's
        grace for a message without ``terminateAt``."""
        if termination.terminate_at is None:
            return self._grace
        return math.ceil(self._clock.seconds_left(termination))

    def stop(self, termination: SpotTermination) -> Result:
        pod = f"{self._namespace}/{termination.workload_id}"
        grace = self.grace_seconds(termination)
        try:
            deleted = self._pods.delete_namespaced_pod(
                termination.workload_id,
                self._namespace,
                body=client.V1DeleteOptions(grace_period_seconds=grace),
                _request_timeout=self._timeout,
            )
            if self._await_gone(termination.workload_id, _uid(deleted), grace):
                return Result("terminated", f"pod {pod} deleted (grace {grace} s)")
        except ApiException as error:
            if error.status == 404:
                return Result("gone", f"pod {pod} not found")
            return Result("failed", f"pod {pod}: HTTP {error.status} {error.reason}")
        except (HTTPError, OSError) as error:
            return Result("failed", f"pod {pod}: the API did not answer: {error}")
        waited = grace + self._settle
        return Result("failed", f"pod {pod} still there {waited:g} s after its delete")

    def _await_gone(self, name: str, uid: str | None, grace: int) -> bool:
        """Whether the pod deleted (``uid``) is gone before grace + settle seconds pass."""

        def gone() -> bool:
            try:
                pod = self._pods.read_namespaced_pod(
                    name, self._namespace, _request_timeout=self._timeout
                )
            except ApiException as error:
                if error.status == 404:
                    return True
                raise
            return uid is not None and _uid(pod) not in (None, uid)

        return poll_until(gone, grace + self._settle, self._clock, self._poll_every)


def _uid(pod: Any) -> str | None:
    metadata = getattr(pod, "metadata", None)
    uid = getattr(metadata, "uid", None)
    return str(uid) if uid else None
