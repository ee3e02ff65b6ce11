"""The node agent's command driver (outcomes from exit codes and output, no shell), and
which driver stops which kind of workload."""

import sys

import pytest

from node_agent.drivers import CommandDriver, Drivers, LogDriver, Result
from reservations.terminations.models import SpotTermination
from termination_messages import WorkloadKind

TERMINATION = SpotTermination.model_validate(
    {
        "terminationId": "t-1",
        "nodeId": "node-a",
        "workloadId": "vm-1;touch /tmp/pwned",
        "workloadKind": "vm",
        "unitIds": ["0000:04:00.0"],
        "reservationId": "res-1",
        "requestedAt": "2026-11-29T00:00:00Z",
    }
)
PY = sys.executable


def test_exit_zero_is_terminated():
    assert CommandDriver(f"{PY} -c pass").stop(TERMINATION).outcome == "terminated"


def test_no_such_domain_or_pod_is_gone():
    virsh = (
        f"{PY} -c \"import sys; sys.stderr.write('error: failed to get domain vm-1'); sys.exit(1)\""
    )
    kubectl = f'{PY} -c "print(\'Error from server (NotFound): pods \\"p\\" not found\'); exit(1)"'
    assert CommandDriver(virsh).stop(TERMINATION).outcome == "gone"
    assert CommandDriver(kubectl).stop(TERMINATION).outcome == "gone"


def test_a_not_found_about_anything_but_the_workload_is_failed_not_gone():
    """ "gone" frees the units: a kubectl whose context is missing has stopped nothing."""
    for said in ('error: context "kube-prod" not found', "error: kubeconfig file not found",
                 "Domain vm-1 found, but the hypervisor is unreachable"):  # fmt: skip
        command = f"{PY} -c \"import sys; sys.stderr.write('{said}'); sys.exit(1)\""
        assert CommandDriver(command).stop(TERMINATION).outcome == "failed", said
    virsh = (
        f"{PY} -c \"import sys; sys.stderr.write('error: Domain not found: vm-1'); sys.exit(1)\""
    )
    assert CommandDriver(virsh).stop(TERMINATION).outcome == "gone"


def test_other_failures_and_timeouts_are_failed():
    assert CommandDriver(f"{PY} -c 'exit(3)'").stop(TERMINATION).outcome == "failed"
    slow = CommandDriver(f"{PY} -c 'import time; time.sleep(5)'", timeout=0.2).stop(TERMINATION)
    assert slow.outcome == "failed"
    assert "timed out" in (slow.detail or "")
    assert CommandDriver("/nonexistent/virsh destroy x").stop(TERMINATION).outcome == "failed"


def test_the_workload_id_is_one_argument_never_shell():
    argv = CommandDriver("virsh destroy {workloadId}").argv(TERMINATION)
    assert argv == ["virsh", "destroy", "vm-1;touch /tmp/pwned"]


def test_the_log_driver_reports_a_second_stop_as_gone():
    driver = LogDriver()
    assert driver.stop(TERMINATION).outcome == "terminated"
    assert driver.stop(TERMINATION).outcome == "gone"


def test_the_grace_period_can_be_passed_to_the_command():
    driver = CommandDriver(
        "kubectl delete pod {workloadId} --grace-period={graceSeconds}", grace_seconds=30
    )
    assert driver.argv(TERMINATION)[-1] == "--grace-period=30"


class OnlyVms:
    name = "vms"
    kinds = frozenset({WorkloadKind.VM})

    def stop(self, termination):
        return Result("terminated", f"stopped {termination.workload_id}")


def test_each_kind_goes_to_its_driver_and_a_kind_without_one_is_failed_never_gone():
    drivers = Drivers([OnlyVms()])
    assert drivers.stop(TERMINATION).outcome == "terminated"
    pod = TERMINATION.model_copy(update={"workload_kind": WorkloadKind.POD})
    result = drivers.stop(pod)
    assert result.outcome == "failed"
    assert "no driver on this node stops pods" in (result.detail or "")


def test_two_drivers_for_one_kind_are_refused():
    with pytest.raises(ValueError, match="vms would have two drivers: vms, log"):
        Drivers([OnlyVms(), LogDriver()])
