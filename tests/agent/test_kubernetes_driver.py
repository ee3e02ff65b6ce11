"""The Kubernetes driver through the official client, against a stand-in API server on
127.0.0.1 (TLS, a CA of the test's own): the requests it makes, and each answer's outcome.
Configuration comes from a kubeconfig file, or from the service account's files."""

from __future__ import annotations

import json
import socket
from datetime import UTC, datetime, timedelta

import pytest

from node_agent.cli import main
from node_agent.drivers import Clock, lead_seconds
from node_agent.kubernetes_driver import KubernetesDriver, api_client
from termination_messages import SpotTermination
from tests.agent.kube_api import KubeApi, make_tls, pod, status
from tests.agent.support import FakeClock, termination

NAMESPACE = "spot"
POD = f"/api/v1/namespaces/{NAMESPACE}/pods/pod-5"
TOKEN = "test-only-service-account-token"


@pytest.fixture(scope="module")
def tls(tmp_path_factory):
    return make_tls(tmp_path_factory.mktemp("tls"))


@pytest.fixture
def kube(tls):
    api = KubeApi(tls)
    yield api
    api.close()


def kubeconfig(path, server, ca) -> object:
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "gpu", "cluster": {"server": server, "certificate-authority": str(ca)}}
        ],
        "users": [{"name": "agent", "user": {"token": TOKEN}}],
        "contexts": [{"name": "gpu-agent", "context": {"cluster": "gpu", "user": "agent"}}],
        "current-context": "gpu-agent",
    }
    path.write_text(json.dumps(document))  # JSON is YAML
    return path


def in_cluster(tmp_path, tls, port) -> object:
    token = tmp_path / "token"
    token.write_text(TOKEN)
    environ = {"KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": str(port)}
    return api_client(service_account=(token, tls.ca), environ=environ)


def bearer(header: str) -> str:
    """The token of an Authorization header (the scheme is case-insensitive, RFC 7235)."""
    scheme, token = header.split(" ", 1)
    assert scheme.lower() == "bearer"
    return token


def pods(api, grace=0, clock=None) -> KubernetesDriver:
    return KubernetesDriver(
        api, NAMESPACE, grace_seconds=grace, clock=(clock or FakeClock()).clock()
    )


def test_a_pod_is_deleted_with_the_grace_period_and_is_terminated_once_gone(kube, tls, tmp_path):
    kube.answer("DELETE", POD, (200, pod("pod-5", NAMESPACE)))
    kube.answer("GET", POD, (404, status(404, "NotFound")))
    api = api_client(kubeconfig(tmp_path / "kubeconfig", kube.url, tls.ca))
    result = pods(api).stop(termination("pod-5", kind="pod"))
    assert result.outcome == "terminated"
    assert kube.requests() == [("DELETE", POD), ("GET", POD)]
    delete = kube.seen[0]
    assert delete.body == {"gracePeriodSeconds": 0}
    assert bearer(delete.headers["authorization"]) == TOKEN
    assert delete.headers["content-type"] == "application/json"


def test_in_cluster_credentials_and_a_grace_period_wait_for_the_pod_to_go(kube, tls, tmp_path):
    terminating = pod("pod-5", NAMESPACE, uid="uid-1")
    kube.answer("DELETE", POD, (200, terminating))
    kube.answer("GET", POD, (200, terminating), (200, terminating), (404, status(404, "NotFound")))
    clock = FakeClock()
    result = pods(in_cluster(tmp_path, tls, kube.port), grace=30, clock=clock).stop(
        termination("pod-5", kind="pod")
    )
    assert result.outcome == "terminated"
    assert kube.seen[0].body == {"gracePeriodSeconds": 30}
    assert bearer(kube.seen[0].headers["authorization"]) == TOKEN  # read from the token file
    assert kube.requests() == [("DELETE", POD)] + [("GET", POD)] * 3
    assert len(clock.slept) == 2  # the two looks that still found it


def test_a_pod_already_gone_is_gone_and_nothing_else_is_asked(kube, tls, tmp_path):
    kube.answer("DELETE", POD, (404, status(404, "NotFound")))
    api = api_client(kubeconfig(tmp_path / "kubeconfig", kube.url, tls.ca))
    assert pods(api).stop(termination("pod-5", kind="pod")).outcome == "gone"
    assert kube.requests() == [("DELETE", POD)]


@pytest.mark.parametrize(("code", "reason"), [(409, "Conflict"), (500, "InternalError"),
                                              (503, "ServiceUnavailable"), (403, "Forbidden")])  # fmt: skip
def test_conflicts_server_errors_and_refusals_are_failed(kube, tls, tmp_path, code, reason):
    kube.answer("DELETE", POD, (code, status(code, reason)))
    api = api_client(kubeconfig(tmp_path / "kubeconfig", kube.url, tls.ca))
    result = pods(api).stop(termination("pod-5", kind="pod"))
    assert result.outcome == "failed"
    assert f"HTTP {code}" in (result.detail or "")


def test_a_pod_replaced_by_one_with_another_uid_is_terminated(kube, tls, tmp_path):
    kube.answer("DELETE", POD, (200, pod("pod-5", NAMESPACE, uid="uid-1")))
    kube.answer("GET", POD, (200, pod("pod-5", NAMESPACE, uid="uid-2")))
    api = api_client(kubeconfig(tmp_path / "kubeconfig", kube.url, tls.ca))
    assert pods(api, grace=30).stop(termination("pod-5", kind="pod")).outcome == "terminated"


def test_a_pod_still_there_after_grace_and_settle_is_failed_not_terminated(kube, tls, tmp_path):
    kube.answer("DELETE", POD, (200, pod("pod-5", NAMESPACE)))
    kube.answer("GET", POD, (200, pod("pod-5", NAMESPACE)))
    api = api_client(kubeconfig(tmp_path / "kubeconfig", kube.url, tls.ca))
    clock = FakeClock()
    result = pods(api, grace=30, clock=clock).stop(termination("pod-5", kind="pod"))
    assert result.outcome == "failed"
    assert sum(clock.slept) == 60  # grace 30 + settle 30


def test_a_look_that_errs_while_waiting_is_failed(kube, tls, tmp_path):
    kube.answer("DELETE", POD, (200, pod("pod-5", NAMESPACE)))
    kube.answer("GET", POD, (500, status(500, "InternalError")))
    api = api_client(kubeconfig(tmp_path / "kubeconfig", kube.url, tls.ca))
    assert pods(api).stop(termination("pod-5", kind="pod")).outcome == "failed"


def test_an_api_server_that_does_not_answer_is_failed(tls, tmp_path):
    with socket.socket() as closed:  # a port nobody listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    api = api_client(kubeconfig(tmp_path / "kubeconfig", f"https://127.0.0.1:{port}", tls.ca))
    result = pods(api).stop(termination("pod-5", kind="pod"))
    assert result.outcome == "failed"
    assert "did not answer" in (result.detail or "")


def test_without_a_kubeconfig_or_a_service_account_the_agent_says_so(monkeypatch, capsys):
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(SystemExit, match="--driver kubernetes: no usable configuration"):
        main(["--node-id", "n", "--queue-url", "q", "--reports-queue-url", "r",
              "--driver", "kubernetes"])  # fmt: skip


# --- a reclaim's notice: delete at once, the seconds left as the pod's grace --------------

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def noticed_pod(notice: int) -> SpotTermination:
    """pod-5's termination, requested at T0 with ``notice`` seconds."""
    message = termination("pod-5", kind="pod")
    return message.model_copy(
        update={"requested_at": T0, "terminate_at": T0 + timedelta(seconds=notice)}
    )


def wall(fake: FakeClock, start: datetime) -> Clock:
    return Clock(fake.monotonic, fake.sleep, lambda: start + timedelta(seconds=fake.now - 1000))


def test_kubernetes_deletes_at_once_with_the_seconds_left_as_the_pods_grace(kube, tls, tmp_path):
    kube.answer("DELETE", POD, (200, pod("pod-5", NAMESPACE)))
    kube.answer("GET", POD, (404, status(404, "NotFound")))
    api = api_client(kubeconfig(tmp_path / "kubeconfig", kube.url, tls.ca))
    fake = FakeClock()
    # The message came 2.5 s after the reclaim: 117.5 s left, rounded up (never sooner).
    clock = wall(fake, T0 + timedelta(seconds=2.5))
    driver = KubernetesDriver(api, NAMESPACE, grace_seconds=5, clock=clock)
    message = noticed_pod(notice=120)
    assert lead_seconds(driver, message) == 120  # started as soon as it comes
    assert driver.stop(message).outcome == "terminated"
    assert kube.seen[0].body == {"gracePeriodSeconds": 118}


def test_kubernetes_without_a_notice_deletes_with_no_grace(kube, tls, tmp_path):
    kube.answer("DELETE", POD, (200, pod("pod-5", NAMESPACE)))
    kube.answer("GET", POD, (404, status(404, "NotFound")))
    api = api_client(kubeconfig(tmp_path / "kubeconfig", kube.url, tls.ca))
    clock = wall(FakeClock(), T0 + timedelta(seconds=1))  # past terminateAt already
    driver = KubernetesDriver(api, NAMESPACE, grace_seconds=5, clock=clock)
    assert driver.stop(noticed_pod(notice=0)).outcome == "terminated"
    assert kube.seen[0].body == {"gracePeriodSeconds": 0}
